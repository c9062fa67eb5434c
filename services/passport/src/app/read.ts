/** The reads: one passport, a page of passports, a passport's links, the tenant's usage. */
import { page, requireTenant, type RequestContext } from "@dpp/kit";
import type { PassportRow } from "../store";
import { PASSPORT_LIST, parseListQuery, type ListQueryInput } from "../domain/list-query";
import { ApiError, normalizeGtin } from "@dpp/contract";
import { fieldAccessTiers } from "../domain/categories";
import { passportLinks, type Links } from "../domain/links";
import type { PassportApp } from "./deps";
import { findPassport } from "./passport-access";

export type { ListQueryInput };

export interface PassportPage {
  passports: PassportRow[];
  hasMore: boolean;
  /** Empty when there is no next page. */
  nextCursor: string;
}

export async function getPassport(app: PassportApp, ctx: RequestContext, id: string): Promise<PassportRow> {
  const t = requireTenant(ctx);
  return findPassport(app.store, t, id);
}

/** Everything a list would refuse (the category, the cursor), without reading anything. */
export function checkListQuery(ctx: RequestContext, input: ListQueryInput): void {
  requireTenant(ctx);
  parseListQuery(input);
}

/** Newest first; the cursor carries the filters it was issued for. */
export async function listPassports(
  app: PassportApp,
  ctx: RequestContext,
  input: ListQueryInput,
): Promise<PassportPage> {
  const t = requireTenant(ctx);
  const q = parseListQuery(input);
  const rows = await app.store.list(t, q.filters, q.limit + 1, q.afterId);
  const p = page(rows, q.limit, { list: PASSPORT_LIST, filters: q.cursorFilters, position: (r) => r.id });
  return { passports: p.rows, hasMore: p.hasMore, nextCursor: p.nextCursor };
}

export async function getPassportLinks(
  app: PassportApp,
  ctx: RequestContext,
  id: string,
): Promise<{ row: PassportRow; links: Links }> {
  const t = requireTenant(ctx);
  const row = await findPassport(app.store, t, id);
  return { row, links: passportLinks(row, app.hosts) };
}

/** Publish slots used (passports published, deactivated or readonly), in the context's mode. */
export async function getUsage(app: PassportApp, ctx: RequestContext): Promise<{ publishedCount: number }> {
  const t = requireTenant(ctx);
  return { publishedCount: await app.store.publishSlotsUsed(t) };
}

/** The members of `data` a public reader may see: those the category marks public (an unknown key is not). */
export function publicData(category: string, data: Record<string, unknown>): Record<string, unknown> {
  const tiers = fieldAccessTiers(category);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(data)) if (tiers[k] === "public") out[k] = v;
  return out;
}

/**
 * The public surface's read: a live passport shown publicly, by id or by a GTIN it or a variant holds, with its
 * public-tier data only. Anything else (unknown, draft, test mode, trashed, deactivated, a malformed GTIN) is the
 * same resource_not_found, so a guess learns nothing. No tenant in the context: this read names none.
 */
export async function findPublicPassport(
  app: PassportApp,
  key: { id?: string; gtin14?: string },
): Promise<{ row: PassportRow; links: Links; variantGtin14: string | null }> {
  const notFound = () => new ApiError("resource_not_found", "No published passport answers to this.", {});
  let row: PassportRow | undefined;
  let variantGtin14: string | null = null;
  if (key.id !== undefined) {
    if (!/^[A-Za-z0-9_]{1,64}$/.test(key.id)) throw notFound();
    row = await app.store.findPublicById(key.id);
  } else if (key.gtin14 !== undefined) {
    const gtin14 = /^\d{14}$/.test(key.gtin14) ? normalizeGtin(key.gtin14) : null;
    if (!gtin14) throw notFound();
    const found = await app.store.findPublicByGtin(gtin14);
    row = found?.row;
    if (found?.role === "variant") variantGtin14 = gtin14;
  }
  if (!row) throw notFound();
  const shown = { ...row, data: publicData(row.category, row.data) };
  return { row: shown, links: passportLinks(row, app.hosts), variantGtin14 };
}
