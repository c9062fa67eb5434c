/**
 * POST .../passports: a draft at version 1, its lead GTIN claimed and passport.created, in one transaction (without
 * a GTIN, one statement).
 */
import { ApiError, domainEvent, newId, passportRelated } from "@dpp/contract";
import { requireTenant, type RequestContext, type TenantContext } from "@dpp/kit";
import type { NewPassportRow, PassportRow } from "../store";
import { parseNewPassport, type NewPassport } from "../domain/create-passport";
import { parseJsonBody } from "../domain/json-body";
import { assertLiveWriteAllowed } from "../domain/plan-rules";
import type { PassportApp } from "./deps";
import { claimLeadGtin } from "./gtin-claims";

export interface CreateInput {
  category: string;
  externalId?: string;
  /** The passport document `data` as JSON object text; empty for none. */
  dataJson: string;
}

/** The checks of a create, in the order a client sees them: the plan's refusal of live writes, then the fields. */
function checkCreate(ctx: RequestContext, input: CreateInput): { t: TenantContext; p: NewPassport } {
  const t = requireTenant(ctx);
  assertLiveWriteAllowed(ctx);
  const p = parseNewPassport({
    category: input.category,
    externalId: input.externalId,
    data: parseJsonBody(input.dataJson),
  });
  return { t, p };
}

/** Everything a create would refuse, without writing anything. */
export function checkCreatePassport(ctx: RequestContext, input: CreateInput): void {
  checkCreate(ctx, input);
}

/**
 * Without a GTIN, one statement (the passport and its passport.created; no begin, no commit). With one, a
 * transaction: that statement, then the lead GTIN's claim.
 */
export async function createPassport(
  app: PassportApp,
  ctx: RequestContext,
  input: CreateInput,
): Promise<PassportRow> {
  const { t, p } = checkCreate(ctx, input);
  const id = newId("pp");
  const row: NewPassportRow = {
    id,
    category: p.category,
    gtin: p.gtin,
    serial_number: p.serialNumber,
    external_id: p.externalId,
    data: p.data,
  };
  const draft = { organization_id: t.organizationId, id, category: p.category, status: "draft", version: 1 };
  const event = domainEvent("passport.created", t, passportRelated(draft, null));
  const gtin = p.gtin;
  const created = gtin
    ? await app.store.transaction(t, async (tx) => {
        const inserted = await tx.createPassport(t, row, event);
        if (inserted) await claimLeadGtin(tx, t, gtin, id);
        return inserted;
      })
    : await app.store.createPassport(t, row, event);
  if (!created)
    throw new ApiError("already_exists", "A passport with this external_id already exists.", {
      external_id: p.externalId,
      passport_id: (await takenBy(app, t, p.externalId)) ?? null,
      issues: [{ source: { pointer: "/external_id" }, rule: "unique" }],
    });
  app.onCommitted();
  return created;
}

/**
 * The passport that holds an external_id: read on the pool (a committed passport, the usual case, read without a
 * statement in the call's transaction), else in the call's transaction, where a passport written earlier in the
 * same transaction and not committed yet is found (an earlier row of the same CreatePassports transaction).
 */
async function takenBy(
  app: PassportApp,
  t: TenantContext,
  externalId: string | null,
): Promise<string | undefined> {
  return (await app.store.idByExternalId(t, externalId)) ?? app.store.idByExternalIdInCall(t, externalId);
}
