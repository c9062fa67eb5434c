/**
 * PATCH .../passports/{id}: an RFC 7386 merge patch of the passport document (rules in
 * src/domain/update-passport.ts). One transaction: lock the row, check Expected-Version, apply the patch, move
 * the lead GTIN claim, write with `WHERE version = <read>` and record passport.updated. A patch that changes
 * nothing writes nothing (no version, no event).
 */
import { ApiError } from "@dpp/contract";
import { requireTenant, type RequestContext } from "@dpp/kit";
import { UniqueConflict, type PassportRow } from "../store";
import { editRefusal } from "../domain/lifecycle";
import { liveWriteRefusal } from "../domain/plan-rules";
import { applyPassportPatch, parsePatchBody } from "../domain/update-passport";
import { parseJsonBody } from "../domain/json-body";
import type { PassportApp } from "./deps";
import { claimLeadGtin } from "./gtin-claims";
import { lockPassport, writeVersioned } from "./passport-access";
import { checkVersion, passportReviewUrl, throwIf } from "./refusals";

export interface UpdateInput {
  id: string;
  /** The merge patch as JSON text. */
  patchJson: string;
  expectedVersion?: number;
}

export async function updatePassport(
  app: PassportApp,
  ctx: RequestContext,
  input: UpdateInput,
): Promise<PassportRow> {
  const { id, expectedVersion } = input;
  const patch = parsePatchBody(parseJsonBody(input.patchJson));
  const t = requireTenant(ctx);
  throwIf(liveWriteRefusal(ctx));
  try {
    const { row, wrote } = await app.store.transaction(t, async (tx) => {
      const current = await lockPassport(tx, t, id);
      checkVersion(current, expectedVersion);
      throwIf(editRefusal(current.status, id));
      if (ctx.credentialKind === "connector" && current.status !== "draft")
        throw new ApiError(
          "connector_writes_drafts_only",
          `A connector may only change drafts; this passport is ${current.status}. A person can make the change.`,
          { passport_id: id, status: current.status, review_url: passportReviewUrl(app, t, id) },
        );
      const next = applyPassportPatch(current, patch);
      if (!next.changed) return { row: current, wrote: false };
      if (next.gtin !== current.gtin) {
        if (current.gtin) await tx.deleteLeadClaim(t, current.gtin, id);
        if (next.gtin) await claimLeadGtin(tx, t, next.gtin, id);
      }
      const updated = await writeVersioned(
        tx,
        t,
        current,
        { data: next.data, gtin: next.gtin, serial_number: next.serialNumber, external_id: next.externalId },
        "passport.updated",
        expectedVersion,
      );
      return { row: updated, wrote: true };
    });
    if (wrote) app.onCommitted();
    return row;
  } catch (err) {
    if (err instanceof UniqueConflict && err.key === "external_id")
      throw new ApiError("already_exists", "Another passport has this external_id.", {
        external_id: patch.externalId ?? null,
        issues: [{ source: { pointer: "/external_id" }, rule: "unique" }],
      });
    throw err;
  }
}
