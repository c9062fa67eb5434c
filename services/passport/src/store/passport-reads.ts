import { sql, type Kysely } from "kysely";
import { statement } from "@dpp/kit";
import type { PassportDB } from "./schema";
import type { ClaimHolder, ListFilters, PassportRow, Tenant } from "./types";

type ById = { org: string; livemode: boolean; id: string };

/** The one read of a passport by tenant and id: the hottest statement of the service, compiled once. */
const byId = (q: Kysely<PassportDB>, p: ById) =>
  q
    .selectFrom("passport")
    .selectAll()
    .where("organization_id", "=", p.org)
    .where("livemode", "=", p.livemode)
    .where("id", "=", p.id);
const readById = statement(byId);
/** The same read, locking the row until the transaction ends. */
export const lockById = statement((q: Kysely<PassportDB>, p: ById) => byId(q, p).forUpdate());

/**
 * A live passport in a status shown publicly (lifecycle's PUBLIC_STATUSES), written as the predicate of the
 * partial index passport_public_id_idx (migration 0007) so that the planner may use it; a tenant read never does.
 */
const PUBLIC_ROW = sql<boolean>`livemode and status in ('published', 'readonly')`;

/** The reads, on the pool or inside a transaction. */
export class PassportReads {
  constructor(protected readonly db: Kysely<PassportDB>) {}

  get(t: Tenant, id: string): Promise<PassportRow | undefined> {
    return readById.takeFirst(this.db, { org: t.organizationId, livemode: t.livemode, id });
  }

  /**
   * Newest first by id (ids sort by creation time); `afterId` is the last id of the previous page. The page
   * size is given as a subquery: Postgres then plans for reading a small part of the tenant's rows, whatever
   * its statistics say (or lack), so the page is read in index order and never sorted from the whole tenant
   * (docs/decisions/0023-statements-and-plans.md).
   */
  list(t: Tenant, f: ListFilters, limit: number, afterId?: string): Promise<PassportRow[]> {
    let q = this.db
      .selectFrom("passport")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode);
    if (f.status) q = q.where("status", "=", f.status);
    if (f.category) q = q.where("category", "=", f.category);
    if (f.updatedSince) q = q.where("updated_at", ">=", f.updatedSince);
    if (afterId) q = q.where("id", "<", afterId);
    return q
      .orderBy("id", "desc")
      .limit(sql<number>`(select ${limit}::int)`)
      .execute();
  }

  /**
   * The public surface's reads, the one exception to the tenant filter (a scan or a public page names no
   * organization): live rows only, in a status that is shown publicly (docs/decisions/0059-public-surface.md).
   * By GTIN, the passport's own GTIN or a variant's: a GTIN claimed live by several organizations answers the
   * passport published first.
   */
  findPublicById(id: string): Promise<PassportRow | undefined> {
    return this.db
      .selectFrom("passport")
      .selectAll()
      .where("id", "=", id)
      .where(PUBLIC_ROW)
      .executeTakeFirst();
  }

  async findPublicByGtin(
    gtin14: string,
  ): Promise<{ row: PassportRow; role: "lead" | "variant" } | undefined> {
    const found = await this.db
      .selectFrom("gtin_claim as c")
      .innerJoin("passport as p", (j) =>
        j
          .onRef("p.organization_id", "=", "c.organization_id")
          .onRef("p.livemode", "=", "c.livemode")
          .onRef("p.id", "=", "c.passport_id"),
      )
      .selectAll("p")
      .select("c.role as claim_role")
      .where("c.livemode", "=", true)
      .where("c.gtin", "=", gtin14)
      .where(sql<boolean>`p.livemode and p.status in ('published', 'readonly')`)
      .orderBy("p.published_at", "asc")
      .orderBy("p.id", "asc")
      .limit(1)
      .executeTakeFirst();
    if (!found) return undefined;
    const { claim_role, ...row } = found;
    return { row: row as PassportRow, role: claim_role };
  }

  /** One publish approval of the tenant. */
  getPublishApproval(t: Tenant, id: string) {
    return this.db
      .selectFrom("publish_approval")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("id", "=", id)
      .executeTakeFirst();
  }

  /** One proposal of the tenant. */
  getProposal(t: Tenant, id: string) {
    return this.db
      .selectFrom("proposal")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("id", "=", id)
      .executeTakeFirst();
  }

  /** The tenant's stored-pending proposals and publish approvals, newest first (the review page's list). */
  listPendingProposals(t: Tenant, limit: number) {
    return this.db
      .selectFrom("proposal")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("state", "=", "pending")
      .orderBy("requested_at", "desc")
      .limit(limit)
      .execute();
  }

  listPendingPublishApprovals(t: Tenant, limit: number) {
    return this.db
      .selectFrom("publish_approval")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("state", "=", "pending")
      .orderBy("created_at", "desc")
      .limit(limit)
      .execute();
  }

  async idByExternalId(t: Tenant, externalId: string | null): Promise<string | undefined> {
    const row = await this.db
      .selectFrom("passport")
      .select("id")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("external_id", "=", externalId)
      .executeTakeFirst();
    return row?.id;
  }

  /** The category and status of the tenant's passports among `ids` (missing ones are not answered). */
  passportStates(t: Tenant, ids: string[]): Promise<{ id: string; category: string; status: string }[]> {
    return this.db
      .selectFrom("passport")
      .select(["id", "category", "status"])
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("id", "in", ids)
      .execute();
  }

  /**
   * Publish slots the tenant uses (passports published, deactivated or readonly), as the trigger of migration
   * 0005 keeps them: one row read, however many passports the tenant has published.
   */
  async publishSlotsUsed(t: Tenant): Promise<number> {
    const row = await this.db
      .selectFrom("publish_slot_usage")
      .select("used")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .executeTakeFirst();
    return row?.used ?? 0;
  }

  /** Who holds each of these GTINs in the tenant, with the holding passport's product_name. */
  claimHolders(t: Tenant, gtins: string[]): Promise<ClaimHolder[]> {
    return this.db
      .selectFrom("gtin_claim as c")
      .leftJoin("passport as p", (j) =>
        j
          .onRef("p.organization_id", "=", "c.organization_id")
          .onRef("p.livemode", "=", "c.livemode")
          .onRef("p.id", "=", "c.passport_id"),
      )
      .select([
        "c.gtin",
        "c.passport_id",
        "c.owner_id",
        "c.role",
        sql<string | null>`p.data->>'product_name'`.as("product_name"),
      ])
      .where("c.organization_id", "=", t.organizationId)
      .where("c.livemode", "=", t.livemode)
      .where("c.gtin", "=", sql<string>`any(${gtins}::text[])`)
      .execute();
  }

  async claimHolder(t: Tenant, gtin: string): Promise<ClaimHolder | undefined> {
    return (await this.claimHolders(t, [gtin]))[0];
  }
}
