/**
 * The reconciler of this side (src/app/reconcile.ts) against the real passport service: variant rows whose GTIN
 * claims went missing (as when passport's own reconciler released the claims of a create whose process died, and a
 * retry under the same key inserted the rows later) have them made again, a page of rows per pass in id order,
 * wrapping around to the first row after the last page.
 */
import { sql } from "kysely";
import { newTenant, tenantContext } from "@dpp/kit/testing";
import { variantClaimsReconciler } from "../../src/app/reconcile";
import { VariantsUnitsStore } from "../../src/store/store";
import { startHarness, type Harness } from "../harness";

let h: Harness;
const tenant = newTenant();
const GTINS = ["4006381333931", "96385074", "036000291452", "5901234123457", "4012345000016"];

beforeAll(async () => {
  h = await startHarness("variants_units_reconcile");
});
afterAll(async () => {
  await h?.close();
});

/** The tenant's claims at passport, GTIN to owner. */
async function claims(): Promise<Map<string, string>> {
  const { rows } = await sql<{ gtin: string; owner_id: string }>`
    select gtin, owner_id from gtin_claim
    where organization_id = ${tenant.organizationId} and livemode = ${tenant.livemode}`.execute(
    h.passportSql,
  );
  return new Map(rows.map((r) => [r.gtin, r.owner_id]));
}

test("rows whose claims were released get them again, two rows a pass in id order, then from the first again", async () => {
  const passportId = await h.createPassport(tenant, "textile");
  const created = await h.client.createVariants(
    { passportId, variants: GTINS.map((gtin, i) => ({ gtin, size: `S${i}` })) },
    { context: tenantContext(tenant) },
  );
  const owners = new Map(created.variants.map((v) => [v.gtin, v.id]));
  expect(await claims()).toEqual(owners);

  // The claims go, the rows stay.
  await sql`delete from gtin_claim where organization_id = ${tenant.organizationId}
    and livemode = ${tenant.livemode}`.execute(h.passportSql);
  expect((await claims()).size).toBe(0);

  const warnings: unknown[] = [];
  const pass = variantClaimsReconciler({
    store: new VariantsUnitsStore(h.sql),
    passport: h.passport,
    graceMs: 0,
    log: { warn: (o: unknown) => warnings.push(o) },
    pageSize: 2,
  });
  const byId = [...created.variants].sort((a, b) => (a.id < b.id ? -1 : 1));
  const claimedAfter = async () => [...(await claims()).values()].sort();

  expect(await pass()).toBe(0);
  expect(await claimedAfter()).toEqual(byId.slice(0, 2).map((v) => v.id));
  expect(await pass()).toBe(0);
  expect(await claimedAfter()).toEqual(byId.slice(0, 4).map((v) => v.id));
  expect(await pass()).toBe(0);
  expect(await claims()).toEqual(owners);

  // The next pass starts from the first row again: a claim lost meanwhile is made again there.
  const first = byId[0]!;
  await sql`delete from gtin_claim where organization_id = ${tenant.organizationId}
    and livemode = ${tenant.livemode} and owner_id = ${first.id}`.execute(h.passportSql);
  expect(await pass()).toBe(0);
  expect(await claims()).toEqual(owners);
  expect(warnings).toEqual([]);
});
