/**
 * The documents use cases: an upload created with its signed URL, confirmed against storage (ready, or not ready
 * with a reason), links to passports, reads through signed URLs by audience, and what publishing asks of a
 * passport's documents. The rules behind each choice: docs/decisions/0052-documents-and-storage.md.
 */
import { ApiError, type Issue } from "@dpp/contract";
import { requireTenant, runKeyedItem, type ClientOf, type RequestContext } from "@dpp/kit";
import { passportV1 } from "@dpp/proto";
import { checkUpload, contentProblem, MAX_BYTES, type UploadInput } from "../domain/document";
import { StorageUnavailable, type StoragePort } from "../storage/port";
import type { DocumentRow, DocumentsStore, ListFilters, Tenant } from "../store/store";

export interface DocumentsApp {
  store: DocumentsStore;
  storage: StoragePort;
  passport: ClientOf<typeof passportV1.PassportService>;
  uploadTtlSeconds: number;
  readTtlSeconds: number;
  /** Wakes the outbox relay after a write that carried an event. */
  onCommitted: () => void;
}

/** Retry-After of storage_unavailable. */
export const STORAGE_RETRY_AFTER_SECONDS = 30;

export function storageUnavailable(cause: unknown): ApiError {
  return new ApiError(
    "storage_unavailable",
    "Storage did not answer, so the files cannot be confirmed now; retry later.",
    { reason: cause instanceof Error ? cause.message : String(cause) },
    { "Retry-After": String(STORAGE_RETRY_AFTER_SECONDS) },
  );
}

/** A read of the caller's context: the call's Idempotency-Key stays with the write it belongs to. */
function readContext(ctx: RequestContext): RequestContext {
  const { idempotency: _key, outcome: _o, ...rest } = ctx;
  return rest;
}

/** The passport, as its owner answers to the caller; another tenant's is not found. */
async function passportStatus(app: DocumentsApp, ctx: RequestContext, id: string): Promise<number> {
  const res = await app.passport.getPassport({ id }, { context: readContext(ctx) });
  return res.passport!.status;
}

async function requirePassport(app: DocumentsApp, ctx: RequestContext, id: string): Promise<void> {
  const status = await passportStatus(app, ctx, id);
  if (status === passportV1.PassportStatus.TRASHED)
    throw new ApiError(
      "wrong_status",
      "The passport is in the trash; restore it before attaching documents.",
      {
        status: "trashed",
      },
    );
}

/**
 * Asks storage what arrived for a pending document: ready when the object is there and its bytes are of the
 * declared type and size; otherwise it stays pending, with the reason when the bytes are wrong. Storage that does
 * not answer leaves it as it is (StorageUnavailable is for the caller to map or ignore).
 */
export async function confirm(app: DocumentsApp, d: DocumentRow): Promise<DocumentRow> {
  if (d.upload_state !== "pending") return d;
  const t = { organizationId: d.organization_id, livemode: d.livemode };
  const stored = await app.storage.stat(d.storage_key);
  if (!stored) return d;
  const problem = contentProblem(d.mime_type, stored.size, stored.head);
  if (problem) {
    if (problem.code !== d.problem_code || problem.message !== d.problem_message)
      await app.store.setProblem(t, d.id, problem.code, problem.message);
    return { ...d, problem_code: problem.code, problem_message: problem.message };
  }
  const ready = await app.store.markReady(t, d.id, stored.size);
  if (!ready) return (await app.store.find(t, d.id)) ?? d;
  app.onCommitted();
  return ready;
}

/** confirm(), quietly: a read answers what is known when storage does not answer. */
async function confirmOnRead<T extends DocumentRow>(app: DocumentsApp, d: T): Promise<T> {
  if (d.upload_state !== "pending") return d;
  try {
    return { ...d, ...(await confirm(app, d)) };
  } catch (err) {
    if (err instanceof StorageUnavailable) return d;
    throw err;
  }
}

export async function createUpload(
  app: DocumentsApp,
  ctx: RequestContext,
  passportId: string,
  input: UploadInput,
) {
  const t = requireTenant(ctx);
  const u = checkUpload(input);
  await requirePassport(app, ctx, passportId);
  const expiresAt = new Date(Math.floor(Date.now() / 1000) * 1000 + app.uploadTtlSeconds * 1000);
  const row = await app.store.createLinked(ctx, t, passportId, { ...u, expiresAt }, ctx.plan?.documentLimit);
  app.onCommitted();
  // The URL is a signature over the row's key: made anew (the same) when a keyed call is replayed.
  const grant = await app.storage.uploadUrl({
    key: row.storage_key,
    mimeType: row.mime_type,
    maxBytes: MAX_BYTES,
    expiresAt,
  });
  return { row, upload: { ...grant, expiresAt, maxBytes: MAX_BYTES } };
}

export async function linkDocument(
  app: DocumentsApp,
  ctx: RequestContext,
  passportId: string,
  documentId: string,
) {
  const t = requireTenant(ctx);
  if (!/^doc_[0-9a-z]{26}$/.test(documentId))
    throw invalidDocumentId(documentId, "document_id is not a document id (doc_...).");
  const d = await app.store.find(t, documentId);
  if (!d) throw invalidDocumentId(documentId, "No document of this organization's library has this id.");
  await requirePassport(app, ctx, passportId);
  const out = await app.store.link(ctx, t, passportId, d);
  if (out.created) app.onCommitted();
  return out;
}

function invalidDocumentId(id: string, message: string): ApiError {
  const issues: Issue[] = [{ source: { pointer: "/document_id" }, rule: "exists", message }];
  return new ApiError("invalid_document_id", message, { document_id: id, issues });
}

export async function unlinkDocument(
  app: DocumentsApp,
  ctx: RequestContext,
  passportId: string,
  documentId: string,
) {
  const t = requireTenant(ctx);
  const row = await app.store.unlink(ctx, t, passportId, documentId);
  if (!row)
    throw new ApiError("resource_not_found", "No such document is attached to this passport.", {
      passport_id: passportId,
      document_id: documentId,
    });
  app.onCommitted();
  return row;
}

export async function listDocuments(
  app: DocumentsApp,
  ctx: RequestContext,
  f: ListFilters,
  fetch: number,
  after: string | undefined,
) {
  const t = requireTenant(ctx);
  if (f.passportId !== undefined) await passportStatus(app, ctx, f.passportId);
  const rows = await app.store.list(t, f, fetch, after);
  return Promise.all(rows.map((r) => confirmOnRead(app, r)));
}

export async function getDocument(app: DocumentsApp, ctx: RequestContext, id: string) {
  const t = requireTenant(ctx);
  const d = await app.store.find(t, id);
  if (!d) throw new ApiError("resource_not_found", "No such document.", { document_id: id });
  return { row: await confirmOnRead(app, d), passports: await app.store.passportsOf(t, id) };
}

async function readUrlOf(app: DocumentsApp, d: DocumentRow) {
  const expiresAt = new Date(Date.now() + app.readTtlSeconds * 1000);
  try {
    const url = await app.storage.readUrl({
      key: d.storage_key,
      mimeType: d.mime_type,
      fileName: d.file_name,
      expiresAt,
    });
    return { url, expiresAt, accessTier: d.access_tier, mimeType: d.mime_type };
  } catch (err) {
    throw storageUnavailable(err);
  }
}

function notReady(d: DocumentRow): ApiError {
  return new ApiError("resource_not_found", "The document's file is not in storage (upload_state pending).", {
    document_id: d.id,
    upload_state: d.upload_state,
    ...(d.problem_code ? { problem: { code: d.problem_code, message: d.problem_message } } : {}),
  });
}

/**
 * A read URL of the tenant's document. For the owning organization's key (documents:read of that organization):
 * any tier. For an authority token (credential kind `authority`, bound by the gateway to this organization and
 * mode): an authority-tier document only; any other (public, restricted, unknown) answers the same
 * resource_not_found, so a guess learns nothing (docs/decisions/0058).
 */
export async function download(app: DocumentsApp, ctx: RequestContext, id: string) {
  const t = requireTenant(ctx);
  const found = await app.store.find(t, id);
  if (!found || (ctx.credentialKind === "authority" && found.access_tier !== "authority"))
    throw new ApiError("resource_not_found", "No such document.", { document_id: id });
  const d = await confirmOnRead(app, found);
  if (d.upload_state !== "ready") throw notReady(d);
  return readUrlOf(app, d);
}

/**
 * A public reader's read URL: a live document of the public tier, ready, attached to a published passport. Every
 * other case (another tier, test mode, not attached, the passport not published, no such id) answers the same
 * resource_not_found, so a guess learns nothing.
 */
export async function publicDownload(
  app: DocumentsApp,
  requestId: string,
  organizationId: string,
  id: string,
) {
  const t: Tenant = { organizationId, livemode: true };
  const notFound = () => new ApiError("resource_not_found", "No such public document.", {});
  const d = /^[A-Za-z0-9_]{1,64}$/.test(organizationId) ? await app.store.find(t, id) : undefined;
  if (!d || d.access_tier !== "public" || d.upload_state !== "ready") throw notFound();
  const ctx: RequestContext = { requestId, organizationId, livemode: true };
  let published = false;
  for (const passportId of await app.store.passportsOf(t, id)) {
    const status = await passportStatus(app, ctx, passportId).catch(() => undefined);
    if (status === passportV1.PassportStatus.PUBLISHED) {
      published = true;
      break;
    }
  }
  if (!published) throw notFound();
  return readUrlOf(app, d);
}

export interface CompanionRef {
  field: string;
  key: string;
  documentId: string;
}

/**
 * What publishing asks: which required companions name a document that is not attached (or whose file is not
 * ready), and that every ready attached file is confirmed in storage (else storage_unavailable).
 */
export async function checkPublish(
  app: DocumentsApp,
  ctx: RequestContext,
  passportId: string,
  companions: readonly CompanionRef[],
) {
  const t = requireTenant(ctx);
  const linked = await app.store.linked(t, passportId);
  const byId = new Map(linked.map((d) => [d.id, d]));
  let confirmed = 0;
  try {
    for (const d of linked) {
      const now = await confirm(app, d);
      byId.set(d.id, now);
      if (now.upload_state !== "ready") continue;
      const stored = await app.storage.stat(now.storage_key);
      if (!stored) throw new StorageUnavailable(`the file of ${d.id} is not in storage`);
      confirmed++;
    }
  } catch (err) {
    if (err instanceof StorageUnavailable) throw storageUnavailable(err);
    throw err;
  }
  const missing = companions.filter((c) => byId.get(c.documentId)?.upload_state !== "ready");
  return { missing, confirmed };
}

/** The sweep: confirms pending uploads (storage that sends no notification) and removes expired ones. */
export async function sweep(app: DocumentsApp, o: { graceSeconds: number; batch: number }) {
  let confirmed = 0;
  let removed = 0;
  for (const d of await app.store.pendingBatch(o.batch)) {
    const now = await confirm(app, d);
    if (now.upload_state === "ready") confirmed++;
  }
  for (const d of await app.store.expiredBatch(o.graceSeconds, o.batch)) {
    const t = { organizationId: d.organization_id, livemode: d.livemode };
    // An upload that arrived just before its URL expired is kept.
    if ((await confirm(app, d)).upload_state === "ready") continue;
    await app.storage.remove(d.storage_key);
    if (await app.store.removePending(t, d.id)) removed++;
  }
  return confirmed + removed;
}

/** The single write a RegisterDependency item stands for (its record's method). */
const REGISTER_DEPENDENCY_METHOD = "/dpp.documents.v1.DocumentsService/RegisterDependency";

export interface DependencyInput {
  key: string;
  passportId: string;
  documentId: string;
  kind: string;
  reference: string;
}

const DEPENDENCY_KINDS = ["reading", "extraction"] as const;

/** What a RegisterDependency item records: the document and the reference it was registered for. */
interface Recorded {
  documentId: string;
  reference: string;
}

/**
 * Records that another service's record depends on a document attached to the passport: detaching it is then
 * refused (document_feeds_reading, document_feeds_extraction). Once per item key, through the kit's keyed items:
 * the caller passes its effect key (writes-under-a-key.md, `once`), so a retried call registers nothing twice and
 * answers what was recorded. A document that is not attached to the passport with its file ready is refused:
 * unit_reading_document_unavailable for a reading, invalid_document_id otherwise.
 */
export async function registerDependency(
  app: DocumentsApp,
  call: { ctx: RequestContext; caller: string },
  input: DependencyInput,
) {
  const t = requireTenant(call.ctx);
  const kind = (DEPENDENCY_KINDS as readonly string[]).includes(input.kind)
    ? (input.kind as (typeof DEPENDENCY_KINDS)[number])
    : undefined;
  const issues: Issue[] = [];
  if (!kind)
    issues.push({ source: { pointer: "/kind" }, rule: "enum", message: "kind is reading or extraction." });
  if (!input.reference || input.reference.length > 255)
    issues.push({
      source: { pointer: "/reference" },
      rule: "length",
      message: "reference is 1 to 255 characters.",
    });
  if (issues.length)
    throw new ApiError("validation_failed", "The dependency cannot be recorded.", { issues });
  const unavailable = () =>
    kind === "reading"
      ? new ApiError(
          "unit_reading_document_unavailable",
          `No document ${input.documentId} can support a reading.`,
          {
            document_id: input.documentId,
            issues: [
              {
                source: { pointer: "/document_id" },
                rule: "document_available",
                message: "The document must be attached to the unit's passport, with its file ready.",
              },
            ],
          },
        )
      : invalidDocumentId(
          input.documentId,
          "The document is not attached to this passport with its file ready.",
        );
  // A pending upload whose file arrived counts: confirmed first, outside the item's transaction.
  const found = await app.store.find(t, input.documentId);
  if (found) await confirmOnRead(app, found);
  const out = await runKeyedItem(
    {
      db: app.store.db,
      call,
      key: input.key,
      // The reference is not part of the item: a caller's retry may draw another one before it learns the first.
      request: { passport_id: input.passportId, document_id: input.documentId, kind },
      method: REGISTER_DEPENDENCY_METHOD,
      encode: (r: Recorded) => new TextEncoder().encode(JSON.stringify(r)),
      decode: (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes)) as Recorded,
    },
    async (ctx): Promise<Recorded> => {
      const row = await app.store.addDependency(
        ctx,
        t,
        input.passportId,
        input.documentId,
        kind!,
        input.reference,
      );
      if (!row) throw unavailable();
      return { documentId: row.id, reference: input.reference };
    },
  );
  const row = await app.store.find(t, out.response.documentId);
  if (!row) throw unavailable();
  // The reference as first recorded: a caller that sends the item again learns the record it registered.
  return { row, reference: out.response.reference, replayed: out.replayed };
}
