/**
 * The publish conditions the documents service owns: every required field satisfied only by a companion document
 * id names a document still attached to the passport, with its file ready (else 422 document_missing), and every
 * file of the passport is confirmed in storage (else 503 storage_unavailable with Retry-After, as documents
 * answers it; a documents service that does not answer cannot confirm anything either).
 */
import { ApiError, isErrorCode, type Issue } from "@dpp/contract";
import type { ClientOf, TenantContext } from "@dpp/kit";
import type { documentsV1 } from "@dpp/proto";
import { documentIdKeys, fieldsRequiredForPublish } from "../domain/categories";
import type { PrePublishCheck, PrePublishSubject } from "../domain/prepublish";

export type DocumentsClient = ClientOf<typeof documentsV1.DocumentsService>;

const RETRY_AFTER_SECONDS = "30";

const empty = (v: unknown) =>
  v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0);

/** The required fields left empty whose companion key names a document: that document must still be attached. */
export function companionsToCheck(p: Pick<PrePublishSubject, "category" | "data">) {
  const keys = documentIdKeys(p.category);
  const out: { field: string; key: string; documentId: string }[] = [];
  for (const field of fieldsRequiredForPublish(p.category)) {
    const key = keys[field];
    if (key === undefined || !empty(p.data[field])) continue;
    const id = p.data[key];
    if (typeof id === "string" && id) out.push({ field, key, documentId: id });
  }
  return out;
}

export function documentsPrePublishCheck(client: DocumentsClient): PrePublishCheck {
  return {
    name: "documents",
    async check(tenant: TenantContext, passport: PrePublishSubject) {
      const { idempotency: _k, outcome: _o, ...context } = tenant;
      const companions = companionsToCheck(passport);
      let res: documentsV1.CheckPublishResponse;
      try {
        res = await client.checkPublish({ passportId: passport.id, companions }, { context });
      } catch (err) {
        if (err instanceof ApiError && err.code === "storage_unavailable") return err;
        if (err instanceof ApiError && isErrorCode(err.code) && err.code !== "internal_error") throw err;
        return new ApiError(
          "storage_unavailable",
          "The passport's files cannot be confirmed now (the documents service did not answer); retry later.",
          { passport_id: passport.id },
          { "Retry-After": RETRY_AFTER_SECONDS },
        );
      }
      if (res.missing.length === 0) return undefined;
      const issues: Issue[] = res.missing.map((m) => ({
        source: { pointer: `/data/${m.key}` },
        rule: "document_attached",
        message: `"${m.field}" is satisfied only by document ${m.documentId}, which is not attached to this passport with its file ready; attach it again or fill in "${m.field}".`,
      }));
      return new ApiError(
        "document_missing",
        `${issues.length} required field${issues.length === 1 ? " is" : "s are"} satisfied only by a document no longer attached.`,
        {
          passport_id: passport.id,
          documents: res.missing.map((m) => ({ field: m.field, key: m.key, document_id: m.documentId })),
          issues,
        },
      );
    },
  };
}
