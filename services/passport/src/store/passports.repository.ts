import { sql, type Kysely, type RawBuilder, type Selectable, type Updateable } from "kysely";
import {
  ApiError,
  domainEvent,
  isUniqueViolation,
  newId,
  passportRelated,
  writeOutbox,
  type TenantContext,
} from "@dpp/kit";
import type { PassportDB, PassportTable } from "./schema";
import type { NewPassport } from "../domain/create-passport";
import type { PassportEventType } from "../domain/lifecycle";

export type PassportRow = Selectable<PassportTable>;

type Timestamp = Date | null | RawBuilder<Date>;

/** The columns a write may set; version and updated_at are the repository's to move. */
export type PassportChange = Omit<
  Updateable<PassportTable>,
  "organization_id" | "livemode" | "id" | "version" | "updated_at" | "published_at" | "trashed_at"
> & { published_at?: Timestamp; trashed_at?: Timestamp };

export interface GtinHolder {
  passport_id: string;
  role: "lead" | "variant";
  owner_id: string;
  product_name: string | null;
}

export interface ListFilters {
  status?: string;
  category?: string;
  updatedSince?: Date;
}

/** Every query filters on the tenant: (organization_id, livemode). */
export class PassportRepository {
  constructor(private readonly db: Kysely<PassportDB>) {}

  async create(t: TenantContext, p: NewPassport): Promise<PassportRow> {
    const id = newId("pp");
    try {
      return await this.db.transaction().execute(async (trx) => {
        const row = await trx
          .insertInto("passport")
          .values({
            organization_id: t.organizationId,
            livemode: t.livemode,
            id,
            category: p.category,
            status: "draft",
            gtin: p.gtin,
            serial_number: p.serialNumber,
            external_id: p.externalId,
            registry_id: null,
            data: JSON.stringify(p.data),
            published_at: null,
            trashed_at: null,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
        if (p.gtin) await this.claimGtin(trx, t, p.gtin, id, "lead", id);
        await writeOutbox(
          trx,
          domainEvent("passport.created", t, passportRelated(row, null), row.created_at),
        );
        return row;
      });
    } catch (err) {
      if (isUniqueViolation(err, "passport_external_id_uq")) {
        const existing = await this.db
          .selectFrom("passport")
          .select("id")
          .where("organization_id", "=", t.organizationId)
          .where("livemode", "=", t.livemode)
          .where("external_id", "=", p.externalId)
          .executeTakeFirst();
        throw new ApiError("already_exists", "A passport with this external_id already exists.", {
          external_id: p.externalId,
          passport_id: existing?.id ?? null,
          issues: [{ source: { pointer: "/external_id" }, rule: "unique" }],
        });
      }
      throw err;
    }
  }

  /**
   * Claims a GTIN for an owner inside the caller's transaction. A GTIN held by
   * another passport (lead or variant) is gtin_in_use naming that passport.
   */
  async claimGtin(
    trx: Kysely<PassportDB>,
    t: TenantContext,
    gtin: string,
    passportId: string,
    role: "lead" | "variant",
    ownerId: string,
  ): Promise<void> {
    const inserted = await trx
      .insertInto("gtin_claim")
      .values({
        organization_id: t.organizationId,
        livemode: t.livemode,
        gtin,
        passport_id: passportId,
        role,
        owner_id: ownerId,
      })
      .onConflict((oc) => oc.columns(["organization_id", "livemode", "gtin"]).doNothing())
      .returning("gtin")
      .executeTakeFirst();
    if (inserted) return;
    const holder = await this.gtinHolder(trx, t, gtin);
    if (holder && holder.passport_id === passportId && holder.owner_id === ownerId) return;
    throw this.gtinInUse(t, gtin, holder, "/data/gtin");
  }

  /** Who holds a GTIN in the tenant, with the holding passport's product_name. */
  async gtinHolder(trx: Kysely<PassportDB>, t: TenantContext, gtin: string): Promise<GtinHolder | undefined> {
    return trx
      .selectFrom("gtin_claim as c")
      .leftJoin("passport as p", (j) =>
        j
          .onRef("p.organization_id", "=", "c.organization_id")
          .onRef("p.livemode", "=", "c.livemode")
          .onRef("p.id", "=", "c.passport_id"),
      )
      .select([
        "c.passport_id",
        "c.role",
        "c.owner_id",
        sql<string | null>`p.data->>'product_name'`.as("product_name"),
      ])
      .where("c.organization_id", "=", t.organizationId)
      .where("c.livemode", "=", t.livemode)
      .where("c.gtin", "=", gtin)
      .executeTakeFirst();
  }

  /** gtin_in_use naming the holding passport, its product_name and the role of the claim. */
  gtinInUse(t: TenantContext, gtin: string, holder: GtinHolder | undefined, pointer: string): ApiError {
    return new ApiError("gtin_in_use", `GTIN ${gtin} belongs to another passport.`, {
      gtin,
      passport: holder ? `organizations/${t.organizationId}/passports/${holder.passport_id}` : null,
      passport_id: holder?.passport_id ?? null,
      product_name: holder?.product_name ?? null,
      role: holder?.role ?? null,
      issues: [{ source: { pointer }, rule: "gtin_in_use" }],
    });
  }

  /** Reads a tenant's passport and locks its row until the transaction ends. */
  async lockForUpdate(
    trx: Kysely<PassportDB>,
    t: TenantContext,
    id: string,
  ): Promise<PassportRow | undefined> {
    return trx
      .selectFrom("passport")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("id", "=", id)
      .forUpdate()
      .executeTakeFirst();
  }

  /**
   * Writes a change to a passport read in this transaction, only if its version is still the one read
   * (`WHERE version = <read>`), moves version and updated_at, and records the event in the outbox in the same
   * transaction. Undefined when the version moved meanwhile.
   */
  async applyChange(
    trx: Kysely<PassportDB>,
    t: TenantContext,
    current: PassportRow,
    change: PassportChange,
    event: PassportEventType,
  ): Promise<PassportRow | undefined> {
    const updated = await trx
      .updateTable("passport")
      .set({ ...change, version: sql<number>`version + 1`, updated_at: sql<Date>`now()` })
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("id", "=", current.id)
      .where("version", "=", current.version)
      .returningAll()
      .executeTakeFirst();
    if (updated)
      await writeOutbox(
        trx as never,
        domainEvent(event, t, passportRelated(updated, current.status), updated.updated_at),
      );
    return updated;
  }

  async get(t: TenantContext, id: string): Promise<PassportRow | undefined> {
    return this.db
      .selectFrom("passport")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("id", "=", id)
      .executeTakeFirst();
  }

  /** Newest first by id (ids sort by creation time); `afterId` is the last id of the previous page. */
  async list(t: TenantContext, f: ListFilters, limit: number, afterId?: string): Promise<PassportRow[]> {
    let q = this.db
      .selectFrom("passport")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode);
    if (f.status) q = q.where("status", "=", f.status);
    if (f.category) q = q.where("category", "=", f.category);
    if (f.updatedSince) q = q.where("updated_at", ">=", f.updatedSince);
    if (afterId) q = q.where("id", "<", afterId);
    return q.orderBy("id", "desc").limit(limit).execute();
  }
}
