/**
 * A unit reading that cites a document (its `document_id`): the document must be attached to the unit's passport
 * with its file ready, and while the reading exists the document cannot be detached (document_feeds_reading). The
 * documents service owns both rules: the reading registers its dependency there (RegisterDependency) before it is
 * written. That call is an effect outside this service's database, so it runs through the kit's `once` with its
 * effect key as the item's key (docs/writes-under-a-key.md): a retried reading registers nothing twice, and the
 * reading's id is the reference documents recorded first, so the reading written and the dependency kept name the
 * same record whatever run of the work commits.
 */
import { ApiError, newId } from "@dpp/contract";
import { once, type RequestContext } from "@dpp/kit";
import { readContext, type VariantsUnitsApp } from "./deps";

export function documentUnavailable(documentId: string): ApiError {
  return new ApiError(
    "unit_reading_document_unavailable",
    `No document ${documentId} can support a reading.`,
    {
      document_id: documentId,
      issues: [{ source: { pointer: "/document_id" }, rule: "document_available" }],
    },
  );
}

/**
 * Registers the reading's dependency on the document with the documents service, once per Idempotency-Key, and
 * answers the id the reading is written with. Without a documents service (DOCUMENTS_ADDR unset) no document can
 * support a reading.
 */
export async function citeDocument(
  app: VariantsUnitsApp,
  call: { ctx: RequestContext; deadline: number },
  passportId: string,
  documentId: string,
): Promise<string> {
  const documents = app.documents;
  if (!documents) throw documentUnavailable(documentId);
  return once(call, "reading-document", async (effectKey, run) => {
    const res = await documents.registerDependency(
      { key: effectKey, passportId, documentId, kind: "reading", reference: newId("rdg") },
      { context: readContext(call.ctx), deadlineMs: run.msLeft() },
    );
    return res.reference;
  });
}
