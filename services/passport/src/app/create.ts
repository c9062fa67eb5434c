/** POST .../passports: a draft at version 1, its lead GTIN claimed and passport.created, in one transaction. */
import { ApiError, domainEvent, newId, passportRelated } from "@dpp/contract";
import { requireTenant, type RequestContext, type TenantContext } from "@dpp/kit";
import { UniqueConflict, type PassportRow } from "../store";
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

export async function createPassport(
  app: PassportApp,
  ctx: RequestContext,
  input: CreateInput,
): Promise<PassportRow> {
  const { t, p } = checkCreate(ctx, input);
  const id = newId("pp");
  let row: PassportRow;
  try {
    row = await app.store.transaction(async (tx) => {
      const created = await tx.insertPassport(t, {
        id,
        category: p.category,
        gtin: p.gtin,
        serial_number: p.serialNumber,
        external_id: p.externalId,
        data: p.data,
      });
      if (p.gtin) await claimLeadGtin(tx, t, p.gtin, id);
      await tx.appendEvent(
        domainEvent("passport.created", t, passportRelated(created, null), created.created_at),
      );
      return created;
    });
  } catch (err) {
    if (err instanceof UniqueConflict && err.key === "external_id")
      throw new ApiError("already_exists", "A passport with this external_id already exists.", {
        external_id: p.externalId,
        passport_id: (await app.store.idByExternalId(t, p.externalId)) ?? null,
        issues: [{ source: { pointer: "/external_id" }, rule: "unique" }],
      });
    throw err;
  }
  app.onCommitted();
  return row;
}
