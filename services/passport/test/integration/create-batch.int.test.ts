/**
 * CreatePassports (the imports service's batch): each row a create with the rules of CreatePassport under its
 * own key (the kit's runKeyedItem), so the same batch sent again answers what it did and creates nothing twice;
 * rows that share an external_id or a GTIN run in their order; a row's refusal is its own.
 */
import { sql } from "kysely";
import {
  context,
  publishableTextile,
  randomGtin13,
  startHarness,
  testTenant,
  type Harness,
} from "../harness";

let h: Harness;
beforeAll(async () => {
  h = await startHarness("passport_batch");
});
afterAll(async () => {
  await h?.close();
});

it("creates each row once under its key, answers a repeated batch from the records, and fails rows alone", async () => {
  const t = testTenant();
  const gtin = randomGtin13();
  const row = (i: number, o: { category?: string; externalId?: string; data?: unknown } = {}) => ({
    key: `job_1:${i}`,
    category: o.category ?? "textile",
    externalId: o.externalId,
    dataJson: JSON.stringify(o.data ?? publishableTextile({ productName: `Row ${i}` })),
  });
  const rows = [
    row(0, { externalId: "a", data: publishableTextile({ gtin }) }),
    row(1, { category: "spaceship" }),
    row(2, { externalId: "a" }),
    row(3, { externalId: "b", data: publishableTextile({ gtin }) }),
    row(4, { externalId: "c" }),
  ];
  const first = await h.client.createPassports({ rows }, { context: context(t) });
  const outcome = (r: (typeof first.results)[number]) =>
    r.outcome.case === "passport" ? "created" : r.outcome.case === "error" ? r.outcome.value.code : "none";
  expect(first.results.map(outcome)).toEqual([
    "created",
    "validation_failed",
    "already_exists",
    "gtin_in_use",
    "created",
  ]);
  expect(first.results.every((r) => !r.replayed)).toBe(true);
  // Row 2 met row 0's passport in the same transaction, not committed yet: its refusal names it.
  const refused = first.results[2]!.outcome;
  const created = first.results[0]!.outcome;
  if (refused.case !== "error" || created.case !== "passport") throw new Error("unexpected outcomes");
  expect(JSON.parse(refused.value.detailsJson)).toMatchObject({
    external_id: "a",
    passport_id: created.value.id,
  });

  const again = await h.client.createPassports({ rows }, { context: context(t) });
  expect(again.results.map(outcome)).toEqual(first.results.map(outcome));
  expect(again.results.every((r) => r.replayed)).toBe(true);
  const ids = (res: typeof first) =>
    res.results.map((r) => (r.outcome.case === "passport" ? r.outcome.value.id : null));
  expect(ids(again)).toEqual(ids(first));
  const { rows: counted } = await sql<{ n: number }>`select count(*)::int as n from passport
    where organization_id = ${t.organizationId} and livemode = false`.execute(h.sql);
  expect(counted[0]!.n).toBe(2);

  // The same key with another row is a conflict of that row only.
  const changed = await h.client.createPassports(
    { rows: [{ ...rows[4]!, dataJson: JSON.stringify({ product_name: "Other" }) }, row(5)] },
    { context: context(t) },
  );
  expect(changed.results.map(outcome)).toEqual(["idempotency_conflict", "created"]);
});
