/**
 * Every query of the webhooks service. Each query of a call filters organization_id and livemode; each write
 * of a call goes through the kit's singleStatement or transaction with the call's context, so that a keyed call's
 * write commits with its idempotency record. The delivery workers' queries (lease, record, release) run outside
 * any call, by endpoint id, under the lease they hold.
 */
import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import { domainEvent, newId, type DomainEvent } from "@dpp/contract";
import { transaction, writeOutbox, type RequestContext, type TenantContext } from "@dpp/kit";
import type { AttemptTable, EndpointTable, WebhooksDB } from "./schema";

export type EndpointRow = Selectable<EndpointTable>;
export type AttemptRow = Selectable<AttemptTable>;
/** An attempt to record. */
export type NewAttempt = Omit<AttemptTable, "id" | "attempted_at" | "sequence"> & { sequence: number | null };

export function endpointEvent(
  type:
    | "webhook_endpoint.created"
    | "webhook_endpoint.updated"
    | "webhook_endpoint.deleted"
    | "webhook_endpoint.disabled",
  e: EndpointRow,
): DomainEvent {
  return domainEvent(
    type,
    { organizationId: e.organization_id, livemode: e.livemode },
    {
      object: "webhook_endpoint",
      id: e.id,
      name: `organizations/${e.organization_id}/webhooks/${e.id}`,
      url: e.url,
      enabled: e.enabled,
      disabled_reason: e.disabled_reason,
    },
  );
}

export interface EndpointChange {
  url?: string;
  description?: string;
  types?: string[];
  enabled?: boolean;
}

export class WebhooksStore {
  constructor(readonly db: Kysely<WebhooksDB>) {}

  create(
    ctx: RequestContext,
    t: TenantContext,
    e: { url: string; description: string; types: string[]; secret: string; deliveredSequence: number },
  ): Promise<EndpointRow> {
    return transaction(this.db, ctx, async (tx) => {
      const row = await tx
        .insertInto("endpoint")
        .values({
          id: newId("whep"),
          organization_id: t.organizationId,
          livemode: t.livemode,
          url: e.url,
          description: e.description,
          types: e.types,
          enabled: true,
          disabled_reason: null,
          secret: e.secret,
          previous_secret: null,
          previous_secret_expires_at: null,
          delivered_sequence: e.deliveredSequence,
          failing_since: null,
          lease_owner: null,
          lease_until: null,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await writeOutbox(tx, endpointEvent("webhook_endpoint.created", row));
      return row;
    });
  }

  get(t: TenantContext, id: string, db: Kysely<WebhooksDB> = this.db): Promise<EndpointRow | undefined> {
    return db
      .selectFrom("endpoint")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("id", "=", id)
      .executeTakeFirst();
  }

  /** Newest first: `fetch` rows after the id `afterId` (the kit's page() reads limit + 1). */
  list(t: TenantContext, fetch: number, afterId: string | undefined): Promise<EndpointRow[]> {
    let q = this.db
      .selectFrom("endpoint")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode);
    if (afterId !== undefined) q = q.where("id", "<", afterId);
    return q.orderBy("id", "desc").limit(fetch).execute();
  }

  /** Applies the change; undefined when the endpoint does not exist. Enabling again starts retrying at once. */
  update(
    ctx: RequestContext,
    t: TenantContext,
    id: string,
    c: EndpointChange,
  ): Promise<EndpointRow | undefined> {
    return transaction(this.db, ctx, async (tx) => {
      const before = await this.lockedEndpoint(tx, t, id);
      if (!before) return undefined;
      const enabling = c.enabled === true && !before.enabled;
      const row = await tx
        .updateTable("endpoint")
        .set({
          ...(c.url !== undefined ? { url: c.url } : {}),
          ...(c.description !== undefined ? { description: c.description } : {}),
          ...(c.types !== undefined ? { types: c.types } : {}),
          ...(c.enabled !== undefined ? { enabled: c.enabled } : {}),
          ...(c.enabled === true ? { disabled_reason: null } : {}),
          ...(enabling ? { failed_attempts: 0, failing_since: null, next_attempt_at: sql<Date>`now()` } : {}),
          updated_at: sql<Date>`now()`,
        })
        .where("id", "=", id)
        .returningAll()
        .executeTakeFirstOrThrow();
      await writeOutbox(tx, endpointEvent("webhook_endpoint.updated", row));
      return row;
    });
  }

  remove(ctx: RequestContext, t: TenantContext, id: string): Promise<EndpointRow | undefined> {
    return transaction(this.db, ctx, async (tx) => {
      const row = await tx
        .deleteFrom("endpoint")
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", t.livemode)
        .where("id", "=", id)
        .returningAll()
        .executeTakeFirst();
      if (row) await writeOutbox(tx, endpointEvent("webhook_endpoint.deleted", row));
      return row;
    });
  }

  /** The new secret signs from now; the current one keeps signing for `overlapSeconds`. */
  rotate(
    ctx: RequestContext,
    t: TenantContext,
    id: string,
    secret: string,
    overlapSeconds: number,
  ): Promise<EndpointRow | undefined> {
    return transaction(this.db, ctx, async (tx) => {
      const before = await this.lockedEndpoint(tx, t, id);
      if (!before) return undefined;
      const row = await tx
        .updateTable("endpoint")
        .set({
          secret,
          previous_secret: overlapSeconds > 0 ? before.secret : null,
          previous_secret_expires_at:
            overlapSeconds > 0 ? sql<Date>`now() + make_interval(secs => ${overlapSeconds})` : null,
          updated_at: sql<Date>`now()`,
        })
        .where("id", "=", id)
        .returningAll()
        .executeTakeFirstOrThrow();
      await writeOutbox(tx, endpointEvent("webhook_endpoint.updated", row));
      return row;
    });
  }

  private lockedEndpoint(tx: Transaction<WebhooksDB>, t: TenantContext, id: string) {
    return tx
      .selectFrom("endpoint")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("id", "=", id)
      .forUpdate()
      .executeTakeFirst();
  }

  listAttempts(t: TenantContext, endpointId: string, fetch: number, afterId: string | undefined) {
    let q = this.db
      .selectFrom("attempt")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("endpoint_id", "=", endpointId);
    if (afterId !== undefined) q = q.where("id", "<", afterId);
    return q.orderBy("id", "desc").limit(fetch).execute();
  }

  getAttempt(t: TenantContext, endpointId: string, id: string): Promise<AttemptRow | undefined> {
    return this.db
      .selectFrom("attempt")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("endpoint_id", "=", endpointId)
      .where("id", "=", id)
      .executeTakeFirst();
  }

  /** An attempt made outside the feed's order (a test event, a redelivery): recorded, the endpoint unchanged. */
  recordAttempt(a: NewAttempt): Promise<AttemptRow> {
    return this.db
      .insertInto("attempt")
      .values({ id: newId("whatt"), ...a })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  // ---- the delivery workers ----

  /**
   * Leases up to `n` enabled endpoints that are due and not leased by a live worker: each is then delivered by
   * this worker alone until it releases it or the lease ends (a worker that died). SKIP LOCKED: workers never
   * wait on each other, and never take the same endpoint.
   */
  async lease(owner: string, leaseMs: number, n: number): Promise<EndpointRow[]> {
    if (n <= 0) return [];
    const { rows } = await sql<EndpointRow>`
      update endpoint set lease_owner = ${owner},
        lease_until = clock_timestamp() + make_interval(secs => ${leaseMs / 1000})
      where id in (
        select id from endpoint
        where enabled and next_attempt_at <= clock_timestamp()
          and (lease_until is null or lease_until < clock_timestamp())
        order by next_attempt_at
        limit ${n}
        for update skip locked)
      returning *`.execute(this.db);
    return rows;
  }

  /**
   * Feed events delivered (in feed order, the last one `sequence`): their attempts recorded and the endpoint's
   * position moved past them, in one statement, if this worker still holds the lease (false: it does not, and
   * must stop).
   */
  async delivered(
    owner: string,
    e: { id: string; organization_id: string; livemode: boolean },
    sequence: number,
    attempts: NewAttempt[],
  ): Promise<boolean> {
    const values = sql.join(
      attempts.map(
        (a) => sql`(${newId("whatt")}, ${a.endpoint_id}, ${a.organization_id}, ${a.livemode}, ${a.webhook_id},
          ${a.event_id}, ${a.event_type}, ${a.sequence}, ${a.next_cursor}, ${a.kind}, ${a.status},
          ${a.response_status}, ${a.error}, ${a.latency_ms}, ${a.next_retry_at})`,
      ),
    );
    const { rows } = await sql<{ id: string }>`
      with a as (
        insert into attempt (id, endpoint_id, organization_id, livemode, webhook_id, event_id, event_type, sequence,
          next_cursor, kind, status, response_status, error, latency_ms, next_retry_at)
        values ${values})
      update endpoint set delivered_sequence = greatest(delivered_sequence, ${sequence}),
        failed_attempts = 0, failing_since = null
      where id = ${e.id} and organization_id = ${e.organization_id} and livemode = ${e.livemode}
        and lease_owner = ${owner}
      returning id`.execute(this.db);
    return rows.length > 0;
  }

  /**
   * A feed event failed: its attempt recorded, and the endpoint either retried at `retryAt` or disabled (with its
   * event), its lease released. Answers the endpoint when it was disabled.
   */
  async failed(
    owner: string,
    e: { id: string; organization_id: string; livemode: boolean },
    a: NewAttempt,
    outcome: { retryAt: Date } | { disable: "gone" | "failing" },
  ): Promise<EndpointRow | undefined> {
    return transaction(this.db, null, async (tx) => {
      await tx
        .insertInto("attempt")
        .values({ id: newId("whatt"), ...a })
        .execute();
      const row = await tx
        .updateTable("endpoint")
        .set({
          failed_attempts: sql<number>`failed_attempts + 1`,
          failing_since: sql<Date>`coalesce(failing_since, now())`,
          lease_owner: null,
          lease_until: null,
          ...("retryAt" in outcome
            ? { next_attempt_at: outcome.retryAt }
            : { enabled: false, disabled_reason: outcome.disable, updated_at: sql<Date>`now()` }),
        })
        .where("id", "=", e.id)
        .where("organization_id", "=", e.organization_id)
        .where("livemode", "=", e.livemode)
        .where("lease_owner", "=", owner)
        .returningAll()
        .executeTakeFirst();
      if (row && "disable" in outcome) {
        await writeOutbox(tx, endpointEvent("webhook_endpoint.disabled", row));
        return row;
      }
      return undefined;
    });
  }

  /** Gives the endpoint back, due again after `againInMs`. */
  async release(
    owner: string,
    e: { id: string; organization_id: string; livemode: boolean },
    againInMs: number,
  ): Promise<void> {
    await sql`
      update endpoint set lease_owner = null, lease_until = null,
        next_attempt_at = greatest(next_attempt_at, clock_timestamp() + make_interval(secs => ${againInMs / 1000}))
      where id = ${e.id} and organization_id = ${e.organization_id} and livemode = ${e.livemode}
        and lease_owner = ${owner}`.execute(this.db);
  }

  /** Deletes up to `limit` attempts older than `days` days; returns how many. */
  async expireAttempts(days: number, limit = 5_000): Promise<number> {
    const { rows } = await sql<{ n: number }>`
      with gone as (
        delete from attempt where id in (
          select id from attempt where attempted_at < now() - make_interval(days => ${days}) limit ${limit})
        returning 1)
      select count(*)::int as n from gone`.execute(this.db);
    return rows[0]?.n ?? 0;
  }
}
