/**
 * CreatePassports: the creates of an import's rows in one call. Each row is a create with the rules of
 * POST .../passports (create.ts), run under the row's own key through the kit's runKeyedItems: the rows commit a
 * few dozen to a transaction, on a few transactions side by side, each row in a savepoint of its own, so its
 * passport, GTIN claim, passport.created and recorded answer commit together, and a refused row leaves nothing but
 * its recorded refusal; a row sent again (a retried or resumed batch) answers its recorded passport or refusal.
 * Rows that share an external_id or a GTIN run one after the other in their order, in one transaction lane, so the
 * first of them wins as it would from one client; the others run side by side.
 */
import { create, toBinary, fromBinary } from "@bufbuild/protobuf";
import { ApiError, normalizeGtin } from "@dpp/contract";
import { requireTenant, runKeyedItems, type RequestContext } from "@dpp/kit";
import { passportV1 } from "@dpp/proto";
import type { PassportRow } from "../store";
import type { PassportApp } from "./deps";
import { createPassport } from "./create";

/** The most rows of one call. */
export const MAX_BATCH_ROWS = 500;
/** The single write a row stands for: its record is CreatePassport's answer. */
const CREATE_METHOD = "/dpp.passport.v1.PassportService/CreatePassport";

export interface BatchRow {
  key: string;
  category: string;
  externalId?: string;
  dataJson: string;
}

export type BatchOutcome =
  { passport: passportV1.Passport; replayed: boolean } | { error: ApiError; replayed: boolean };

/** What a row may conflict on: its external_id and its GTIN, as far as they can be read before its checks. */
function conflictKeys(row: BatchRow): string[] {
  const keys: string[] = [];
  if (row.externalId !== undefined) keys.push(`x:${row.externalId}`);
  try {
    const data = JSON.parse(row.dataJson || "{}") as { gtin?: unknown };
    if (typeof data.gtin === "string") {
      let gtin = data.gtin;
      try {
        gtin = normalizeGtin(gtin) ?? gtin;
      } catch {
        // A malformed GTIN is refused by the row's own checks.
      }
      keys.push(`g:${gtin}`);
    }
  } catch {
    // Malformed data is refused by the row's own checks.
  }
  return keys;
}

/** The rows in chains: rows that share a conflict key (directly or through others) are one chain, in order. */
export function chainsOf(rows: BatchRow[]): number[][] {
  const parent = rows.map((_, i) => i);
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i]!)));
  const owner = new Map<string, number>();
  rows.forEach((row, i) => {
    for (const k of conflictKeys(row)) {
      const j = owner.get(k);
      if (j === undefined) owner.set(k, i);
      else {
        const a = find(i);
        const b = find(j);
        if (a !== b) parent[Math.max(a, b)] = Math.min(a, b);
      }
    }
  });
  const chains = new Map<number, number[]>();
  rows.forEach((_, i) => {
    const root = find(i);
    const chain = chains.get(root) ?? [];
    chain.push(i);
    chains.set(root, chain);
  });
  return [...chains.values()];
}

const encode = (r: passportV1.CreatePassportResponse) => toBinary(passportV1.CreatePassportResponseSchema, r);
const decode = (b: Uint8Array) => fromBinary(passportV1.CreatePassportResponseSchema, b);

export async function createPassports(
  app: PassportApp,
  call: { ctx: RequestContext; caller: string },
  rows: BatchRow[],
  toMessage: (row: PassportRow) => passportV1.Passport,
): Promise<BatchOutcome[]> {
  requireTenant(call.ctx);
  if (rows.length > MAX_BATCH_ROWS)
    throw new ApiError("validation_failed", `At most ${MAX_BATCH_ROWS} rows per call.`, {
      issues: [{ source: { pointer: "/rows" }, rule: "max_rows" }],
    });
  const results = await runKeyedItems(
    {
      db: app.db,
      call,
      method: CREATE_METHOD,
      encode,
      decode,
      onCommitted: app.onCommitted,
      openWithWork: true,
      order: chainsOf(rows),
    },
    rows.map((row) => ({
      key: row.key,
      request: { category: row.category, external_id: row.externalId, data_json: row.dataJson },
      row,
    })),
    async ({ row }, ctx) => {
      const created = await createPassport(app, ctx, {
        category: row.category,
        externalId: row.externalId,
        dataJson: row.dataJson,
      });
      return create(passportV1.CreatePassportResponseSchema, { passport: toMessage(created) });
    },
  );
  return results.map((r) =>
    r.error
      ? { error: r.error, replayed: r.replayed }
      : { passport: r.response.passport!, replayed: r.replayed },
  );
}
