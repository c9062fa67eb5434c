/**
 * Every query of the documents service. Each filters organization_id and livemode, except the sweep's two
 * (pendingBatch, expiredBatch), which look across tenants for maintenance and answer rows that name their tenant.
 * Each write goes through the kit's singleStatement or transaction with the call's context, so that a keyed call's
 * write commits with its idempotency record, and writes its event in the same transaction.
 */
import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import { ApiError, domainEvent, newId } from "@dpp/contract";
import { transaction, writeOutbox, type CallScope, type TenantContext } from "@dpp/kit";

/** The tenant of a query: an organization in one mode. */
export type Tenant = Pick<TenantContext, "organizationId" | "livemode">;
/** Where the reconciler's scan of reading dependencies stands. */
export type ReadingPosition = { organization_id: string; livemode: boolean; reference: string };
import type { DocumentTable, DocumentsDB } from "./schema";

export type DocumentRow = Selectable<DocumentTable>;
/** A document as a passport carries it. */
export type LinkedRow = DocumentRow & { passport_id: string; linked_at: Date };

export interface NewDocument {
  type: string;
  accessTier: string;
  fileName: string;
  displayName: string;
  mimeType: string;
  fileSize: number;
  expiresAt: Date;
}

export interface ListFilters {
  passportId?: string;
  type?: string;
  accessTier?: string;
}

type EventType = "document.created" | "document.uploaded" | "document.linked" | "document.unlinked";

function event(type: EventType, d: DocumentRow, passportId: string | null) {
  return domainEvent(
    type,
    { organizationId: d.organization_id, livemode: d.livemode },
    {
      object: "document",
      id: d.id,
      name: `organizations/${d.organization_id}/documents/${d.id}`,
      type: d.type,
      access_tier: d.access_tier,
      upload_state: d.upload_state,
      passport_id: passportId,
    },
  );
}

export const storageKey = (t: Tenant, id: string) =>
  `${t.organizationId}/${t.livemode ? "live" : "test"}/${id}`;

/** The tenant a storage key names. */
export function tenantOfKey(key: string): (Tenant & { documentId: string }) | undefined {
  const m = /^([A-Za-z0-9_]+)\/(test|live)\/([A-Za-z0-9_]+)$/.exec(key);
  return m ? { organizationId: m[1]!, livemode: m[2] === "live", documentId: m[3]! } : undefined;
}

export class DocumentsStore {
  constructor(readonly db: Kysely<DocumentsDB>) {}

  private tenant<T extends keyof DocumentsDB>(db: Kysely<DocumentsDB>, table: T, t: Tenant) {
    return db
      .selectFrom(table as "document")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode);
  }

  /** Documents in the tenant's library (documents_used). */
  async count(t: Tenant, db: Kysely<DocumentsDB> = this.db): Promise<number> {
    const r = await this.tenant(db, "document", t)
      .select((e) => e.fn.countAll<string>().as("n"))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /**
   * A new document with its link to the passport and its event, unless the library already holds `limit` documents
   * (counted under a per-tenant lock, so concurrent uploads cannot pass the limit together).
   */
  createLinked(
    call: CallScope,
    t: Tenant,
    passportId: string,
    d: NewDocument,
    limit: number | undefined,
  ): Promise<LinkedRow> {
    return transaction(this.db, call, async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtext(${`documents:${t.organizationId}:${t.livemode}`}))`.execute(
        trx,
      );
      if (limit !== undefined) {
        const used = await this.count(t, trx);
        if (used >= limit)
          throw new ApiError(
            "document_limit_reached",
            `All ${limit} documents of the plan are used; delete a document or move to a plan with more.`,
            { document_limit: limit, documents_used: used },
          );
      }
      const id = newId("doc");
      const row = await trx
        .insertInto("document")
        .values({
          id,
          organization_id: t.organizationId,
          livemode: t.livemode,
          type: d.type,
          access_tier: d.accessTier,
          file_name: d.fileName,
          display_name: d.displayName,
          mime_type: d.mimeType,
          file_size: d.fileSize > 0 ? String(d.fileSize) : null,
          upload_state: "pending",
          upload_expires_at: d.expiresAt,
          storage_key: storageKey(t, id),
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      const link = await trx
        .insertInto("document_link")
        .values({
          organization_id: t.organizationId,
          livemode: t.livemode,
          passport_id: passportId,
          document_id: id,
        })
        .returning("linked_at")
        .executeTakeFirstOrThrow();
      await writeOutbox(trx, event("document.created", row, passportId));
      return { ...row, passport_id: passportId, linked_at: link.linked_at };
    });
  }

  find(t: Tenant, id: string): Promise<DocumentRow | undefined> {
    return this.tenant(this.db, "document", t).selectAll().where("id", "=", id).executeTakeFirst();
  }

  /** Attaches the document; `created` false when it was attached already (nothing written). */
  link(call: CallScope, t: Tenant, passportId: string, d: DocumentRow) {
    return transaction(this.db, call, async (trx) => {
      const inserted = await trx
        .insertInto("document_link")
        .values({
          organization_id: t.organizationId,
          livemode: t.livemode,
          passport_id: passportId,
          document_id: d.id,
        })
        .onConflict((oc) => oc.doNothing())
        .returning("linked_at")
        .executeTakeFirst();
      if (inserted) {
        await writeOutbox(trx, event("document.linked", d, passportId));
        return { row: { ...d, passport_id: passportId, linked_at: inserted.linked_at }, created: true };
      }
      const existing = await this.linkOf(trx, t, passportId, d.id);
      return { row: { ...d, passport_id: passportId, linked_at: existing!.linked_at }, created: false };
    });
  }

  private linkOf(db: Kysely<DocumentsDB>, t: Tenant, passportId: string, documentId: string, lock = false) {
    const q = db
      .selectFrom("document_link")
      .select("linked_at")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("passport_id", "=", passportId)
      .where("document_id", "=", documentId);
    return (lock ? q.forUpdate() : q).executeTakeFirst();
  }

  /** Detaches the document, unless a record depends on it; undefined when it was not attached. */
  unlink(call: CallScope, t: Tenant, passportId: string, documentId: string) {
    return transaction(this.db, call, async (trx) => {
      const d = await trx
        .selectFrom("document")
        .selectAll()
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", t.livemode)
        .where("id", "=", documentId)
        .executeTakeFirst();
      // The link locked: a dependency registered meanwhile (addDependency locks it too) is seen below or waits.
      const link = d && (await this.linkOf(trx, t, passportId, documentId, true));
      if (!d || !link) return undefined;
      const deps = await trx
        .selectFrom("document_dependency")
        .select(["kind", "reference"])
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", t.livemode)
        .where("passport_id", "=", passportId)
        .where("document_id", "=", documentId)
        .orderBy("kind")
        .execute();
      const extraction = deps.filter((x) => x.kind === "extraction");
      if (extraction.length)
        throw new ApiError(
          "document_feeds_extraction",
          "Passport values were extracted from this document; it stays attached while the passport exists.",
          { document_id: documentId, passport_id: passportId, records: extraction.map((x) => x.reference) },
        );
      const readings = deps.filter((x) => x.kind === "reading");
      if (readings.length)
        throw new ApiError(
          "document_feeds_reading",
          "Recorded battery values cite this document; it stays attached while those readings exist.",
          { document_id: documentId, passport_id: passportId, readings: readings.map((x) => x.reference) },
        );
      await trx
        .deleteFrom("document_link")
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", t.livemode)
        .where("passport_id", "=", passportId)
        .where("document_id", "=", documentId)
        .execute();
      await writeOutbox(trx, event("document.unlinked", d, passportId));
      return { ...d, passport_id: passportId, linked_at: link.linked_at };
    });
  }

  /**
   * Records that a record depends on a document attached to the passport (extraction, reading), in the call's
   * transaction (a keyed item's); undefined, nothing written, when the document is not attached to the passport with
   * its file ready.
   */
  addDependency(
    call: CallScope,
    t: Tenant,
    passportId: string,
    documentId: string,
    kind: "extraction" | "reading",
    reference: string,
  ): Promise<DocumentRow | undefined> {
    return transaction(this.db, call, async (trx) => {
      const d = await trx
        .selectFrom("document as d")
        .innerJoin("document_link as l", (j) =>
          j
            .onRef("l.document_id", "=", "d.id")
            .onRef("l.organization_id", "=", "d.organization_id")
            .onRef("l.livemode", "=", "d.livemode"),
        )
        .selectAll("d")
        .where("d.organization_id", "=", t.organizationId)
        .where("d.livemode", "=", t.livemode)
        .where("d.id", "=", documentId)
        .where("l.passport_id", "=", passportId)
        .where("d.upload_state", "=", "ready")
        .forUpdate("l")
        .executeTakeFirst();
      if (!d) return undefined;
      await trx
        .insertInto("document_dependency")
        .values({
          organization_id: t.organizationId,
          livemode: t.livemode,
          passport_id: passportId,
          document_id: documentId,
          kind,
          reference,
        })
        .execute();
      return d;
    });
  }

  /**
   * A page of `reading` dependencies older than `graceMs`, across tenants, after `after` in (organization, mode,
   * reference) order (the reconciler's scan; document_dependency_reading_idx).
   */
  async staleReadingDependencies(
    after: ReadingPosition | undefined,
    graceMs: number,
    limit: number,
  ): Promise<ReadingPosition[]> {
    const from = after ?? { organization_id: "", livemode: false, reference: "" };
    const { rows } = await sql<ReadingPosition>`
      select organization_id, livemode, reference from document_dependency
      where kind = 'reading'
        and (organization_id, livemode, reference) > (${from.organization_id}, ${from.livemode}, ${from.reference})
        and created_at < now() - make_interval(secs => ${graceMs / 1000}::float8)
      order by organization_id, livemode, reference
      limit ${limit}::int`.execute(this.db);
    return rows;
  }

  /** Deletes the tenant's `reading` dependencies with these references if still older than `graceMs`; how many. */
  async releaseReadingDependencies(t: Tenant, references: string[], graceMs: number): Promise<number> {
    if (!references.length) return 0;
    const { rows } = await sql<{ reference: string }>`
      delete from document_dependency
      where organization_id = ${t.organizationId} and livemode = ${t.livemode} and kind = 'reading'
        and reference = any(${references}::text[])
        and created_at < now() - make_interval(secs => ${graceMs / 1000}::float8)
      returning reference`.execute(this.db);
    return rows.length;
  }

  /** Newest first: `fetch` rows after the id `afterId` (the kit's page() reads limit + 1). */
  async list(
    t: Tenant,
    f: ListFilters,
    fetch: number,
    afterId: string | undefined,
  ): Promise<(DocumentRow & { passport_id?: string; linked_at?: Date })[]> {
    let q = this.db
      .selectFrom("document as d")
      .selectAll("d")
      .where("d.organization_id", "=", t.organizationId)
      .where("d.livemode", "=", t.livemode);
    if (f.type) q = q.where("d.type", "=", f.type);
    if (f.accessTier) q = q.where("d.access_tier", "=", f.accessTier);
    if (afterId !== undefined) q = q.where("d.id", "<", afterId);
    if (f.passportId === undefined) return q.orderBy("d.id", "desc").limit(fetch).execute();
    return q
      .innerJoin("document_link as l", (j) =>
        j
          .onRef("l.document_id", "=", "d.id")
          .onRef("l.organization_id", "=", "d.organization_id")
          .onRef("l.livemode", "=", "d.livemode"),
      )
      .where("l.passport_id", "=", f.passportId)
      .select(["l.passport_id", "l.linked_at"])
      .orderBy("d.id", "desc")
      .limit(fetch)
      .execute();
  }

  /** The passport's documents (for publishing). */
  linked(t: Tenant, passportId: string): Promise<DocumentRow[]> {
    return this.db
      .selectFrom("document as d")
      .innerJoin("document_link as l", "l.document_id", "d.id")
      .selectAll("d")
      .where("l.organization_id", "=", t.organizationId)
      .where("l.livemode", "=", t.livemode)
      .where("d.organization_id", "=", t.organizationId)
      .where("d.livemode", "=", t.livemode)
      .where("l.passport_id", "=", passportId)
      .execute();
  }

  /** The passports a document is attached to. */
  async passportsOf(t: Tenant, documentId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom("document_link")
      .select("passport_id")
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("document_id", "=", documentId)
      .orderBy("linked_at")
      .execute();
    return rows.map((r) => r.passport_id);
  }

  /** A pending document becomes ready with its stored size, and its event; undefined when it was not pending. */
  markReady(t: Tenant, id: string, size: number): Promise<DocumentRow | undefined> {
    return transaction(this.db, null, async (trx) => {
      const row = await trx
        .updateTable("document")
        .set({
          upload_state: "ready",
          uploaded_at: sql<Date>`now()`,
          file_size: String(size),
          problem_code: null,
          problem_message: null,
        })
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", t.livemode)
        .where("id", "=", id)
        .where("upload_state", "=", "pending")
        .returningAll()
        .executeTakeFirst();
      if (row) await writeOutbox(trx, event("document.uploaded", row, null));
      return row;
    });
  }

  /** Why a pending document is not ready. */
  async setProblem(t: Tenant, id: string, code: string | null, message: string | null): Promise<void> {
    await this.db
      .updateTable("document")
      .set({ problem_code: code, problem_message: message })
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("id", "=", id)
      .where("upload_state", "=", "pending")
      .execute();
  }

  /** Pending documents whose upload is still open, oldest first (the sweep confirms them). Across tenants. */
  pendingBatch(limit: number): Promise<DocumentRow[]> {
    return this.db
      .selectFrom("document")
      .selectAll()
      .where("upload_state", "=", "pending")
      .where("problem_code", "is", null)
      .where("upload_expires_at", ">", sql<Date>`now() - interval '1 minute'`)
      .orderBy("upload_expires_at")
      .limit(limit)
      .execute();
  }

  /** Pending documents whose upload URL expired `graceSeconds` ago. Across tenants. */
  expiredBatch(graceSeconds: number, limit: number): Promise<DocumentRow[]> {
    return this.db
      .selectFrom("document")
      .selectAll()
      .where("upload_state", "=", "pending")
      .where("upload_expires_at", "<", sql<Date>`now() - make_interval(secs => ${graceSeconds})`)
      .orderBy("upload_expires_at")
      .limit(limit)
      .execute();
  }

  /** Removes a pending document and its links (the sweep, after its upload expired). */
  async removePending(t: Tenant, id: string): Promise<boolean> {
    return transaction(this.db, null, async (trx: Transaction<DocumentsDB>) => {
      await trx
        .deleteFrom("document_link")
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", t.livemode)
        .where("document_id", "=", id)
        .execute();
      const r = await trx
        .deleteFrom("document")
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", t.livemode)
        .where("id", "=", id)
        .where("upload_state", "=", "pending")
        .executeTakeFirst();
      return r.numDeletedRows > 0n;
    });
  }
}
