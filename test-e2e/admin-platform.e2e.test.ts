/**
 * Platform operations on a passport (deactivate, reactivate, lock, unlock) are not API endpoints:
 * an operator runs them with the admin CLI, which asks the passport service over gRPC.
 */
import { runAdmin } from "@dpp/admin";
import { envelope, startHarness, type Harness, type Tenant } from "./support/harness";

let h: Harness;
let t: Tenant;

beforeAll(async () => {
  h = await startHarness("e2e_admin_platform");
  t = await h.tenant("Platform Brand");
  process.env.PASSPORT_ADDR = h.stack.services.passport.address;
  process.env.INTERNAL_AUTH_PRIVATE_KEY = h.stack.adminKey;
});
afterAll(async () => {
  delete process.env.PASSPORT_ADDR;
  delete process.env.INTERNAL_AUTH_PRIVATE_KEY;
  await h?.close();
});

const admin = (command: string, id: string, extra: string[] = []) =>
  runAdmin(
    [command, "--org", t.organizationId, "--mode", "test", "--id", id, ...extra],
    "/nonexistent",
  ) as Promise<any>;

it("deactivates, reactivates, locks and unlocks a published passport, each with its event", async () => {
  const base = `/organizations/${t.organizationId}/passports`;
  const created = await h.request(base, {
    key: t.testKey,
    body: {
      category: "textile",
      data: {
        product_name: "Linen shirt",
        manufacturer_name: "Acme",
        manufacturer_address: "1 Rua, Porto",
        manufacturer_country: "PT",
        material_composition: [{ fiber: "linen", percentage: 100 }],
        substances_of_concern: [],
        recycling_instructions: "Textile bank",
        care_instructions: "30 °C",
        gtin: "4006381333931",
      },
    },
  });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  expect((await h.request(`${base}/${id}/publish`, { key: t.testKey, method: "POST" })).status).toBe(200);

  // Only a readonly passport can be unlocked: the state machine refuses with wrong_status.
  await expect(admin("passport:unlock", id)).rejects.toMatchObject({ code: "wrong_status" });

  const deactivated = await admin("passport:deactivate", id);
  expect(deactivated).toMatchObject({ object: "passport", id, status: "deactivated" });
  const read = await h.request(`${base}/${id}`, { key: t.testKey });
  expect(read.body.status).toBe("deactivated");
  // Stale Expected-Version is refused by the owner, as over HTTP.
  await expect(
    admin("passport:reactivate", id, ["--expected-version", String(read.body.version - 1)]),
  ).rejects.toMatchObject({ code: "precondition_failed" });
  expect(
    (await admin("passport:reactivate", id, ["--expected-version", String(read.body.version)])).status,
  ).toBe("published");
  expect((await admin("passport:lock", id)).status).toBe("readonly");
  const patch = await h.request(`${base}/${id}`, {
    key: t.testKey,
    method: "PATCH",
    body: { data: { product_name: "Changed" } },
  });
  expect(patch.status).toBe(409);
  expect(envelope(patch).code).toBe("wrong_status");
  expect((await admin("passport:unlock", id)).status).toBe("published");

  // Another mode cannot see it.
  await expect(
    runAdmin(["passport:lock", "--org", t.organizationId, "--mode", "live", "--id", id], "/nonexistent"),
  ).rejects.toMatchObject({ code: "resource_not_found" });

  const types = ["passport.deactivated", "passport.reactivated", "passport.locked", "passport.unlocked"];
  let events: any[] = [];
  for (const until = Date.now() + 15000; events.length < 4 && Date.now() < until;) {
    const q = types.map((ty) => `type=${ty}`).join("&");
    events = (await h.request(`/organizations/${t.organizationId}/events?${q}`, { key: t.testKey })).body
      .data;
    if (events.length < 4) await new Promise((r) => setTimeout(r, 100));
  }
  expect(events.map((e) => [e.type, e.related.previous_status, e.related.status])).toEqual([
    ["passport.deactivated", "published", "deactivated"],
    ["passport.reactivated", "deactivated", "published"],
    ["passport.locked", "published", "readonly"],
    ["passport.unlocked", "readonly", "published"],
  ]);
});
