/**
 * Every condition of publishing, shared by publish (the first one is its refusal) and validate (lists them all,
 * so `publishable` is exactly "publish would succeed" for a secret key; a connector's publish additionally
 * waits for a person). Environmental claims are warnings: they never block.
 */
import { ApiError, validationFailed, type Issue } from "@dpp/contract";
import { type RequestContext, type TenantContext } from "@dpp/kit";
import type { PassportRow, PassportTx } from "../store";
import { publishIssues, validatePassportData } from "../domain/validate";
import { transitionRefusal } from "../domain/lifecycle";
import { liveWriteRefusal } from "../domain/plan-rules";
import { detectEnvironmentalClaims, findingMessage } from "../domain/environmental-claims";
import type { PrePublishInput } from "../domain/prepublish";
import type { PassportApp } from "./deps";
import { gtinInUse } from "./refusals";

/** A reason publishing is blocked, with where in the passport it points (for the validation record). */
export interface Blocker {
  error: ApiError;
  pointer: string;
  /** The stored document itself is invalid (the record's `valid`). */
  schema?: boolean;
}

export interface Warning {
  code: string;
  message: string;
  doc_url: string;
  pointer: string;
}

/**
 * The blockers of publishing `row` now, in the order publish reports them. When `publishing`, stops before the
 * checks owned by other services once one is found. The publish slots are counted here for the validation
 * record only: publish checks them once its own update took a slot (`assertPublishSlotTaken`).
 */
export async function publishBlockers(
  app: PassportApp,
  tx: PassportTx,
  ctx: RequestContext,
  t: TenantContext,
  row: PassportRow,
  input: PrePublishInput,
  publishing: boolean,
): Promise<Blocker[]> {
  const out: Blocker[] = [];
  const plan = liveWriteRefusal(ctx);
  if (plan) out.push({ error: plan, pointer: "" });
  const status = transitionRefusal("publish", row.status, row.id);
  if (status) out.push({ error: status, pointer: "/status" });
  const schemaIssues = validatePassportData(row.category, row.data);
  if (schemaIssues.length)
    out.push({ error: validationFailed(schemaIssues), pointer: "/data", schema: true });
  if (!row.gtin)
    out.push({
      error: new ApiError("gtin_required", "A GTIN is required before publishing; set data.gtin.", {
        passport_id: row.id,
        issues: [{ source: { pointer: "/data/gtin" }, rule: "required" }],
      }),
      pointer: "/data/gtin",
    });
  const missing = publishIssues(row.category, row.data);
  if (missing.length)
    out.push({
      error: validationFailed(
        missing,
        `${missing.length} field${missing.length === 1 ? " is" : "s are"} required before publishing.`,
      ),
      pointer: "/data",
    });
  if (row.gtin) {
    const holder = await tx.claimHolder(t, row.gtin);
    if (holder && holder.passport_id !== row.id)
      out.push({ error: gtinInUse(t, row.gtin, holder, "/data/gtin"), pointer: "/data/gtin" });
  }
  if (publishing && out.length) return out;
  const refusal = await app.checks.check(t, row, input);
  if (refusal) {
    const first = (refusal.details.issues as Issue[] | undefined)?.[0];
    out.push({ error: refusal, pointer: first && "pointer" in first.source ? first.source.pointer : "" });
  }
  const limit = ctx.plan?.publishLimit;
  // Publish checks the slots once its own update took one (assertPublishSlotTaken), the last of its refusals.
  if (limit !== undefined && row.status === "draft" && !publishing) {
    const used = await tx.publishSlotsUsed(t);
    if (used >= limit) out.push({ error: publishLimitReached(ctx, limit, used), pointer: "" });
  }
  return out;
}

function publishLimitReached(ctx: RequestContext, limit: number, used: number): ApiError {
  return new ApiError(
    "publish_limit_reached",
    `All ${limit} publish slots of the ${ctx.plan?.planId} plan are used; unpublish a passport or change plan.`,
    { limit, published_count: used, plan_id: ctx.plan?.planId ?? null },
  );
}

/**
 * After publish's own update took a slot (the trigger of migration 0005 moved the tenant's number and holds its
 * row until commit): refuses, rolling the publish back, when that slot was beyond the plan's limit. So a
 * tenant's publishes wait for each other only from their update to their commit, and two cannot take the last
 * slot (decision 0038).
 */
export async function assertPublishSlotTaken(tx: PassportTx, ctx: RequestContext, t: TenantContext) {
  const limit = ctx.plan?.publishLimit;
  if (limit === undefined) return;
  const used = await tx.publishSlotsUsed(t);
  if (used > limit) throw publishLimitReached(ctx, limit, used - 1);
}

/** Environmental claims found in the passport, as warnings with their documentation link. */
export function publishWarnings(app: PassportApp, row: PassportRow): Warning[] {
  return detectEnvironmentalClaims(row.category, row.data).map((f) => ({
    code: "environmental_claim_detected",
    message: findingMessage(f),
    doc_url: `${app.docsBaseUrl}#environmental_claim_detected`,
    pointer: f.pointer,
  }));
}
