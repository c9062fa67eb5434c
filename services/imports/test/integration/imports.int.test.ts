/** ImportsService over gRPC: create (keyed) and list, each tenant's own. */
import { keyedContext, newTenant, tenantContext } from "@dpp/kit/testing";
import { startHarness, type Harness } from "../harness";

let h: Harness;

beforeAll(async () => {
  h = await startHarness("imports");
});
afterAll(async () => {
  await h?.close();
});

it("creates imports and lists them newest first, a page at a time, the tenant's only", async () => {
  const t = newTenant();
  for (const label of ["one", "two", "three"])
    await h.client.createImport({ label }, { context: tenantContext(t) });
  await h.client.createImport({ label: "elsewhere" }, { context: tenantContext() });
  const first = await h.client.listImports({ limit: 2 }, { context: tenantContext(t) });
  expect(first.imports.map((x) => x.label)).toEqual(["three", "two"]);
  expect(first.hasMore).toBe(true);
  const second = await h.client.listImports(
    { limit: 2, cursor: first.nextCursor },
    { context: tenantContext(t) },
  );
  expect(second.imports.map((x) => x.label)).toEqual(["one"]);
  expect([second.hasMore, second.nextCursor]).toEqual([false, ""]);
});

it("answers a create again under the same Idempotency-Key without writing twice", async () => {
  const t = newTenant();
  const ctx = () => keyedContext(t, { key: "k1", request: { label: "once" } });
  const a = await h.client.createImport({ label: "once" }, { context: ctx() });
  const b = await h.client.createImport({ label: "once" }, { context: ctx() });
  expect(b.import!.id).toBe(a.import!.id);
  expect((await h.rowCounts(t)).import).toBe(1);
});

it("refuses an empty label and a foreign cursor", async () => {
  await expect(h.client.createImport({ label: " " }, { context: tenantContext() })).rejects.toBeRefusedWith(
    "validation_failed",
    { issues: [expect.objectContaining({ source: { pointer: "/label" }, rule: "required" })] },
  );
  await expect(
    h.client.listImports({ cursor: "not-a-cursor!" }, { context: tenantContext() }),
  ).rejects.toBeRefusedWith("cursor_invalid");
});
