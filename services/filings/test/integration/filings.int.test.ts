/** FilingsService over gRPC: create (keyed) and list, each tenant's own. */
import { keyedContext, newTenant, tenantContext } from "@dpp/kit/testing";
import { startHarness, type Harness } from "../harness";

let h: Harness;

beforeAll(async () => {
  h = await startHarness("filings");
});
afterAll(async () => {
  await h?.close();
});

it("creates filings and lists them newest first, a page at a time, the tenant's only", async () => {
  const t = newTenant();
  for (const label of ["one", "two", "three"])
    await h.client.createFiling({ label }, { context: tenantContext(t) });
  await h.client.createFiling({ label: "elsewhere" }, { context: tenantContext() });
  const first = await h.client.listFilings({ limit: 2 }, { context: tenantContext(t) });
  expect(first.filings.map((x) => x.label)).toEqual(["three", "two"]);
  expect(first.hasMore).toBe(true);
  const second = await h.client.listFilings(
    { limit: 2, cursor: first.nextCursor },
    { context: tenantContext(t) },
  );
  expect(second.filings.map((x) => x.label)).toEqual(["one"]);
  expect([second.hasMore, second.nextCursor]).toEqual([false, ""]);
});

it("answers a create again under the same Idempotency-Key without writing twice", async () => {
  const t = newTenant();
  const ctx = () => keyedContext(t, { key: "k1", request: { label: "once" } });
  const a = await h.client.createFiling({ label: "once" }, { context: ctx() });
  const b = await h.client.createFiling({ label: "once" }, { context: ctx() });
  expect(b.filing!.id).toBe(a.filing!.id);
  expect((await h.rowCounts(t)).filing).toBe(1);
});

it("refuses an empty label and a foreign cursor", async () => {
  await expect(h.client.createFiling({ label: " " }, { context: tenantContext() })).rejects.toBeRefusedWith(
    "validation_failed",
    { issues: [expect.objectContaining({ source: { pointer: "/label" }, rule: "required" })] },
  );
  await expect(
    h.client.listFilings({ cursor: "not-a-cursor!" }, { context: tenantContext() }),
  ).rejects.toBeRefusedWith("cursor_invalid");
});
