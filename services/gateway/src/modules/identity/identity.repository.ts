import { sql, type Kysely, type Selectable } from "kysely";
import { domainEvent } from "@dpp/contract";
import { writeOutbox } from "@dpp/kit";
import type {
  ApiKeyTable,
  AuthorityTokenTable,
  GatewayDB,
  GrantTable,
  ManagedLinkTable,
  OrganizationTable,
} from "../../store/schema";

/** Rows as read: the schema's own table types, so the two cannot drift. */
export type KeyRecord = Selectable<ApiKeyTable>;
export type OrganizationRecord = Selectable<OrganizationTable>;
export type LinkRecord = Selectable<ManagedLinkTable>;
export type GrantRecord = Selectable<GrantTable>;
export type AuthorityTokenRecord = Selectable<AuthorityTokenTable>;

/**
 * Channel on which the gateway schema's triggers announce every change of an organization, a key, a grant or a
 * managing link (migration 0005), so every gateway evicts what it cached (identity-cache.ts).
 */
export const IDENTITY_CHANGED_CHANNEL = "gateway_identity_changed";

/** A change as announced: `key:<key id>`, `organization:<organization id>`, `access:<client organization id>`. */
export type IdentityChange = `key:${string}` | `organization:${string}` | `access:${string}`;

export interface ConnectionRecord {
  organization_id: string;
  display_name: string;
  link_status: "accepted" | null;
  scopes: string[];
  granted_at: Date;
}

/** Organizations, keys, managing links and grants: the gateway's own schema. */
export class IdentityRepository {
  constructor(
    private readonly db: Kysely<GatewayDB>,
    /** Called after a transaction that recorded events commits (wakes the outbox relay). */
    private readonly onEventsCommitted: () => void = () => undefined,
    /**
     * Called after a change commits, before the caller answers: this process evicts what it cached at once,
     * while other processes learn it from the trigger's notification.
     */
    private readonly onChanged: (change: IdentityChange) => void = () => undefined,
  ) {}

  /**
   * Records grant.created / grant.revoked for each grant in the client's feed, in the mode of the granted
   * key, inside the caller's transaction.
   */
  private async recordGrantEvents(
    trx: Kysely<GatewayDB>,
    type: "grant.created" | "grant.revoked",
    grants: GrantRecord[],
  ): Promise<void> {
    if (grants.length === 0) return;
    const keys = await trx
      .selectFrom("api_key")
      .select(["id", "livemode"])
      .where(
        "id",
        "in",
        grants.map((g) => g.key_id),
      )
      .execute();
    const modeOf = new Map(keys.map((k) => [k.id, k.livemode]));
    for (const g of grants) {
      const livemode = modeOf.get(g.key_id);
      if (livemode === undefined) continue;
      await writeOutbox(
        trx as never,
        domainEvent(
          type,
          { organizationId: g.organization_id, livemode },
          {
            object: "grant",
            organization_id: g.organization_id,
            key_id: g.key_id,
            scopes: g.scopes,
            status: type === "grant.created" ? "active" : "revoked",
          },
        ),
      );
    }
  }

  async findKeyByDigest(digest: string): Promise<KeyRecord | undefined> {
    return this.db.selectFrom("api_key").selectAll().where("secret_digest", "=", digest).executeTakeFirst();
  }

  /** An authority token by the digest of its text (docs/decisions/0058); read on every use, never cached. */
  async findAuthorityTokenByDigest(digest: string): Promise<AuthorityTokenRecord | undefined> {
    return this.db
      .selectFrom("authority_token")
      .selectAll()
      .where("secret_digest", "=", digest)
      .executeTakeFirst();
  }

  async insertAuthorityToken(t: Omit<AuthorityTokenRecord, "created_at" | "revoked_at">) {
    return this.db.insertInto("authority_token").values(t).returningAll().executeTakeFirstOrThrow();
  }

  /** Revokes an authority token (kept, with revoked_at); undefined when there is none with this id. */
  async revokeAuthorityToken(id: string): Promise<AuthorityTokenRecord | undefined> {
    return this.db
      .updateTable("authority_token")
      .set({ revoked_at: sql<Date>`coalesce(revoked_at, now())` })
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
  }

  async findKey(id: string): Promise<KeyRecord | undefined> {
    return this.db.selectFrom("api_key").selectAll().where("id", "=", id).executeTakeFirst();
  }

  async findOrganization(id: string): Promise<OrganizationRecord | undefined> {
    return this.db.selectFrom("organization").selectAll().where("id", "=", id).executeTakeFirst();
  }

  /**
   * The scopes a key holds on a client organization: an unrevoked grant while
   * the key's organization still manages the client. Undefined otherwise.
   */
  async grantedScopes(
    key: Pick<KeyRecord, "id" | "organization_id">,
    clientId: string,
  ): Promise<string[] | undefined> {
    const row = await this.db
      .selectFrom("grant as g")
      .innerJoin("managed_link as l", (j) =>
        j
          .onRef("l.client_organization_id", "=", "g.organization_id")
          .on("l.manager_organization_id", "=", key.organization_id)
          .on("l.status", "=", "accepted"),
      )
      .select("g.scopes")
      .where("g.key_id", "=", key.id)
      .where("g.organization_id", "=", clientId)
      .where("g.revoked_at", "is", null)
      .executeTakeFirst();
    return row?.scopes;
  }

  /** The caller's own organization first, then every client the key reaches. */
  async connections(key: KeyRecord): Promise<ConnectionRecord[]> {
    const own = await this.findOrganization(key.organization_id);
    const clients = await this.db
      .selectFrom("grant as g")
      .innerJoin("managed_link as l", (j) =>
        j
          .onRef("l.client_organization_id", "=", "g.organization_id")
          .on("l.manager_organization_id", "=", key.organization_id)
          .on("l.status", "=", "accepted"),
      )
      .innerJoin("organization as o", "o.id", "g.organization_id")
      .select(["g.organization_id", "o.name", "g.scopes", "g.granted_at"])
      .where("g.key_id", "=", key.id)
      .where("g.revoked_at", "is", null)
      .orderBy("g.granted_at")
      .orderBy("g.organization_id")
      .execute();
    const out: ConnectionRecord[] = [];
    if (own)
      out.push({
        organization_id: own.id,
        display_name: own.name,
        link_status: null,
        scopes: key.scopes,
        granted_at: key.created_at,
      });
    for (const c of clients)
      out.push({
        organization_id: c.organization_id,
        display_name: c.name,
        link_status: "accepted",
        scopes: c.scopes,
        granted_at: c.granted_at,
      });
    return out;
  }

  // ---- administration (the admin CLI) ----

  async insertOrganization(o: { id: string; name: string; plan_id?: string; subscription_status?: string }) {
    return this.db.insertInto("organization").values(o).returningAll().executeTakeFirstOrThrow();
  }

  async setPlan(id: string, planId: string, subscriptionStatus: string) {
    const org = await this.db
      .updateTable("organization")
      .set({ plan_id: planId, subscription_status: subscriptionStatus })
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    this.onChanged(`organization:${id}`);
    return org;
  }

  async insertKey(
    k: Omit<
      KeyRecord,
      "created_at" | "revoked_at" | "rotated_at" | "rotation_overlap_ends_at" | "replaced_by_key_id"
    >,
  ) {
    return this.db
      .insertInto("api_key")
      .values({ ...k, scopes: sql`${sql.val(k.scopes)}::text[]` as unknown as string[] })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /** Revokes a key; the schema's trigger announces it, so gateways drop it from their cache at once. */
  async revokeKey(id: string): Promise<KeyRecord | undefined> {
    const k = await this.db
      .updateTable("api_key")
      .set({ revoked_at: sql<Date>`coalesce(revoked_at, now())` })
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    this.onChanged(`key:${id}`);
    return k;
  }

  async markRotated(id: string, replacedBy: string, overlapEndsAt: Date): Promise<KeyRecord | undefined> {
    const k = await this.db
      .updateTable("api_key")
      .set({
        rotated_at: sql<Date>`now()`,
        rotation_overlap_ends_at: overlapEndsAt,
        replaced_by_key_id: replacedBy,
      })
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    this.onChanged(`key:${id}`);
    return k;
  }

  async findLink(managerId: string, clientId: string): Promise<LinkRecord | undefined> {
    return this.db
      .selectFrom("managed_link")
      .selectAll()
      .where("manager_organization_id", "=", managerId)
      .where("client_organization_id", "=", clientId)
      .executeTakeFirst();
  }

  /** Clients an organization manages (accepted links), with their plans. */
  async acceptedClients(managerId: string): Promise<OrganizationRecord[]> {
    return this.db
      .selectFrom("managed_link as l")
      .innerJoin("organization as o", "o.id", "l.client_organization_id")
      .selectAll("o")
      .where("l.manager_organization_id", "=", managerId)
      .where("l.status", "=", "accepted")
      .orderBy("o.id")
      .execute();
  }

  /** Whether the organization holds a usable (unrevoked, unexpired) key in this mode. */
  async hasUsableKey(organizationId: string, livemode: boolean): Promise<boolean> {
    const row = await this.db
      .selectFrom("api_key")
      .select("id")
      .where("organization_id", "=", organizationId)
      .where("livemode", "=", livemode)
      .where("revoked_at", "is", null)
      .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">", sql<Date>`now()`)]))
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  async setAffichageDelegation(
    id: string,
    status: OrganizationRecord["affichage_delegation_status"],
    portalBrandId: string | null,
  ) {
    const org = await this.db
      .updateTable("organization")
      .set({
        affichage_delegation_status: status,
        affichage_portal_brand_id: portalBrandId,
        affichage_delegated_at:
          status === "active" ? sql<Date>`coalesce(affichage_delegated_at, now())` : null,
      })
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    this.onChanged(`organization:${id}`);
    return org;
  }

  async upsertLink(managerId: string, clientId: string, franceMandate: boolean) {
    const link = await this.db
      .insertInto("managed_link")
      .values({
        manager_organization_id: managerId,
        client_organization_id: clientId,
        status: "accepted",
        france_mandate_confirmed_at: franceMandate ? new Date() : null,
      })
      .onConflict((oc) =>
        oc.columns(["manager_organization_id", "client_organization_id"]).doUpdateSet({
          status: "accepted",
          ended_at: null,
          france_mandate_confirmed_at: franceMandate ? new Date() : null,
        }),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
    this.onChanged(`access:${clientId}`);
    return link;
  }

  /** Ends the arrangement and, in the same transaction, every grant on that client held by the manager's keys. */
  async endLink(managerId: string, clientId: string) {
    return this.db
      .transaction()
      .execute(async (trx) => {
        const link = await trx
          .updateTable("managed_link")
          .set({ status: "ended", ended_at: sql<Date>`now()` })
          .where("manager_organization_id", "=", managerId)
          .where("client_organization_id", "=", clientId)
          .returningAll()
          .executeTakeFirst();
        const ended = await trx
          .updateTable("grant")
          .set({ revoked_at: sql<Date>`now()` })
          .where("organization_id", "=", clientId)
          .where("revoked_at", "is", null)
          .where(
            "key_id",
            "in",
            trx.selectFrom("api_key").select("id").where("organization_id", "=", managerId),
          )
          .returningAll()
          .execute();
        await this.recordGrantEvents(trx, "grant.revoked", ended);
        return link;
      })
      .finally(() => {
        this.onChanged(`access:${clientId}`);
        this.onEventsCommitted();
      });
  }

  /** Operator override (admin `Admin.grant`): sets a grant without the API's rules. */
  async upsertGrant(keyId: string, clientId: string, scopes: string[]) {
    const grant = await this.db.transaction().execute(async (trx) => {
      const g = await trx
        .insertInto("grant")
        .values({
          key_id: keyId,
          organization_id: clientId,
          scopes: sql`${sql.val(scopes)}::text[]` as unknown as string[],
        })
        .onConflict((oc) =>
          oc
            .columns(["key_id", "organization_id"])
            .doUpdateSet({ scopes: sql`excluded.scopes`, revoked_at: null, granted_at: sql`now()` }),
        )
        .returningAll()
        .executeTakeFirstOrThrow();
      await this.recordGrantEvents(trx, "grant.created", [g]);
      return g;
    });
    this.onChanged(`access:${clientId}`);
    this.onEventsCommitted();
    return grant;
  }

  /** The grant row of a key on a client (active or ended), if any. */
  async findGrant(keyId: string, clientId: string): Promise<GrantRecord | undefined> {
    return this.db
      .selectFrom("grant")
      .selectAll()
      .where("key_id", "=", keyId)
      .where("organization_id", "=", clientId)
      .executeTakeFirst();
  }

  /**
   * Creates the grant, or re-opens an ended one, unless an active grant exists:
   * then that grant is returned unchanged with created = false. One statement,
   * so two concurrent grants of the same key cannot both win.
   */
  async createGrant(
    keyId: string,
    clientId: string,
    scopes: string[],
    managerId: string,
  ): Promise<{ grant: GrantRecord; created: boolean } | { linkEnded: true }> {
    const result = await this.db.transaction().execute(async (trx) => {
      // Lock the link: ending the arrangement (endLink) updates this row, so a grant
      // cannot slip in after the arrangement ended and come back to life on a new link.
      const link = await trx
        .selectFrom("managed_link")
        .select("status")
        .where("manager_organization_id", "=", managerId)
        .where("client_organization_id", "=", clientId)
        .forShare()
        .executeTakeFirst();
      if (link?.status !== "accepted") return { linkEnded: true as const };
      const inserted = await trx
        .insertInto("grant")
        .values({
          key_id: keyId,
          organization_id: clientId,
          scopes: sql`${sql.val(scopes)}::text[]` as unknown as string[],
        })
        .onConflict((oc) =>
          oc
            .columns(["key_id", "organization_id"])
            .doUpdateSet({ scopes: sql`excluded.scopes`, revoked_at: null, granted_at: sql`now()` })
            .where("grant.revoked_at", "is not", null),
        )
        .returningAll()
        .executeTakeFirst();
      if (inserted) {
        await this.recordGrantEvents(trx, "grant.created", [inserted]);
        return { grant: inserted, created: true };
      }
      const existing = await trx
        .selectFrom("grant")
        .selectAll()
        .where("key_id", "=", keyId)
        .where("organization_id", "=", clientId)
        .executeTakeFirstOrThrow();
      return { grant: existing, created: false };
    });
    if ("grant" in result && result.created) {
      this.onChanged(`access:${clientId}`);
      this.onEventsCommitted();
    }
    return result;
  }

  /** Ends one active grant; undefined when there was none. */
  async revokeGrant(keyId: string, clientId: string): Promise<GrantRecord | undefined> {
    const revoked = await this.db.transaction().execute(async (trx) => {
      const g = await trx
        .updateTable("grant")
        .set({ revoked_at: sql<Date>`now()` })
        .where("key_id", "=", keyId)
        .where("organization_id", "=", clientId)
        .where("revoked_at", "is", null)
        .returningAll()
        .executeTakeFirst();
      if (g) await this.recordGrantEvents(trx, "grant.revoked", [g]);
      return g;
    });
    if (revoked) {
      this.onChanged(`access:${clientId}`);
      this.onEventsCommitted();
    }
    return revoked;
  }
}
