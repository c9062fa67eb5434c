/**
 * The rows of the authorization matrix: test-e2e/authz-matrix.json, then the routes of each service's own
 * gateway module (services/<name>/gateway/), whose cells are derived from the route table: a route of an
 * organization's collection (no path parameter but {organization}) answers as every such route does (below).
 * services/<name>/gateway/authz.json gives, by operationId, the body to send and any cell that differs.
 */
import fs from "node:fs";
import path from "node:path";
import { ROUTE_MODULES, type RouteSpec } from "@dpp/gateway";
import { loadRegistry, REPO_ROOT } from "@dpp/stack";

export interface Cell {
  status: number;
  code: string | null;
}
export interface Row {
  operation: string;
  method: string;
  path: string;
  body?: unknown;
  expect: Record<string, Cell>;
}
export interface Matrix {
  credential_kinds: string[];
  managing_grant_scopes: string[];
  routes: Row[];
}

const refused = (status: number, code: string): Cell => ({ status, code });

/** Whether scopes `held` allow `needed` (a write scope also allows the matching read scope). */
const allows = (held: readonly string[], needed: string) =>
  held.includes(needed) || (needed.endsWith(":read") && held.includes(needed.replace(/:read$/, ":write")));

/** The cells of an `organization` route of a collection, for each credential kind of the matrix. */
export function derivedCells(spec: RouteSpec, grantScopes: readonly string[]): Record<string, Cell> {
  if (spec.auth !== "organization" || !spec.scope || spec.path.replace("{organization}", "").includes("{"))
    throw new Error(
      `${spec.operationId}: only an organization route of a collection has derived cells; give its row in authz.json`,
    );
  const ok: Cell = { status: spec.successStatus, code: null };
  const notFound = refused(404, "organization_not_found_or_not_granted");
  return {
    none: refused(401, "invalid_key"),
    malformed: refused(401, "invalid_key"),
    unknown: refused(401, "invalid_key"),
    revoked: refused(401, "key_revoked"),
    expired: refused(401, "key_expired"),
    rotated_after_window: refused(401, "key_rotated"),
    rotated_within_window: ok,
    other_mode: ok,
    own_with_scope: ok,
    own_without_scope: refused(403, "insufficient_scope"),
    other_organization: notFound,
    managing_with_grant: allows(grantScopes, spec.scope) ? ok : refused(403, "insufficient_scope"),
    managing_grant_revoked: notFound,
    connector: ok,
  };
}

/** The matrix's own rows and, for each route of a service's own module without one, its derived row. */
export function matrixRows(matrix: Matrix, routes: readonly RouteSpec[]): Row[] {
  const rows = [...matrix.routes];
  const listed = new Set(rows.map((r) => `${r.method} ${r.path}`));
  for (const s of loadRegistry()) {
    const dir = path.join(REPO_ROOT, s.folder, "gateway");
    if (!fs.existsSync(path.join(dir, "module.ts"))) continue;
    const file = path.join(dir, "authz.json");
    const given = (fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : {}) as Record<
      string,
      { body?: unknown; expect?: Record<string, Cell> }
    >;
    for (const spec of routes.filter((r) => ROUTE_MODULES[r.operationId] === s.gatewayModule)) {
      if (listed.has(`${spec.method} ${spec.path}`)) continue;
      const g = given[spec.operationId] ?? {};
      rows.push({
        operation: spec.operationId,
        method: spec.method,
        path: spec.path,
        ...(g.body !== undefined ? { body: g.body } : {}),
        // A route on one resource ({id}) gives its row in full; only a collection's row is derived.
        expect:
          g.expect && matrix.credential_kinds.every((k) => g.expect![k] !== undefined)
            ? g.expect
            : { ...derivedCells(spec, matrix.managing_grant_scopes), ...(g.expect ?? {}) },
      });
    }
  }
  return rows;
}
