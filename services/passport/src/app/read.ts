/** The reads: one passport, a page of passports, a passport's links, the tenant's usage. */
import { page, requireTenant, type RequestContext } from "@dpp/kit";
import type { PassportRow } from "../store";
import { PASSPORT_LIST, parseListQuery, type ListQueryInput } from "../domain/list-query";
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
