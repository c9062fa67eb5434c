/**
 * Units of battery passports through the SDK and the API (spec: Units, Unit status; docs/decisions/0051): the
 * create batch and its refusals, the plan's unit limit, the status machine with its history, readings with
 * `values` and `missing_fields`. Every answer is checked against the OpenAPI document by the harness.
 */
import { DppError } from "@dpp/client";
import { envelope, startHarness, type Harness, type Tenant } from "./support/harness";
import { publishableBattery } from "./support/fixtures";

jest.setTimeout(240_000);

let h: Harness;
let t: Tenant;

beforeAll(async () => {
  h = await startHarness("units");
  t = await h.tenant("Cells", "pro");
});
afterAll(async () => {
  await h?.close();
});

async function battery(tn: Tenant = t): Promise<string> {
  const res = await h.request(`/organizations/${tn.organizationId}/passports`, {
    key: tn.testKey,
    body: { category: "battery" },
  });
  h.expectStatus(res, 201);
  return res.body.id as string;
}

/** Changes the plan and waits until the gateway answers with it (its cache's bound is 5 s). */
async function planIs(tn: Tenant, plan: string, status: string): Promise<void> {
  await h.admin.setPlan(tn.organizationId, plan, status);
  for (const until = Date.now() + 10_000; ;) {
    const caps = await h.request(`/organizations/${tn.organizationId}/capabilities`, { key: tn.testKey });
    h.expectStatus(caps, 200);
    const publishing = caps.body.data.find((c: any) => c.id === "passport_publishing");
    if (publishing.detail.plan_id === plan || Date.now() > until) {
      expect(publishing.detail.plan_id).toBe(plan);
      return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

const units = (tn: Tenant, id: string) => `/organizations/${tn.organizationId}/passports/${id}/units`;

async function refusal(p: Promise<unknown>): Promise<DppError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof DppError) return err;
    throw err;
  }
  throw new Error("expected a refusal");
}

it("adds units through the SDK, lists them with filters and cursors, and refuses per row", async () => {
  const sdk = h.sdk(t.testKey).organization(t.organizationId);
  const id = await battery();
  const created = await sdk.units.create(id, [
    { unit_serial: "SN-1" },
    { unit_serial: "SN-2", status: "original" },
    { unit_serial: "SN-3", status: "original" },
  ]);
  expect(created.data.map((u) => [u.unit_serial, u.status])).toEqual([
    ["SN-1", null],
    ["SN-2", "original"],
    ["SN-3", "original"],
  ]);
  expect(created.data[1]).toMatchObject({
    object: "unit",
    passport_id: id,
    passport: `organizations/${t.organizationId}/passports/${id}`,
    values: {},
    status_history: [{ from: null, to: "original", key_id: t.testKeyId }],
  });
  expect(created.data[0]!.missing_fields).toContain("state_of_health");

  const all = await sdk.units.list(id, { limit: 2 }).toArray();
  expect(all.map((u) => u.unit_serial)).toEqual(["SN-1", "SN-2", "SN-3"]);
  const originals = await sdk.units.list(id, { status: "original" }).toArray();
  expect(originals.map((u) => u.unit_serial)).toEqual(["SN-2", "SN-3"]);
  const one = await sdk.units.list(id, { unit_serial: "SN-3" }).toArray();
  expect(one.map((u) => u.id)).toEqual([created.data[2]!.id]);

  const dup = await refusal(
    sdk.units.create(id, [{ unit_serial: "SN-9" }, { unit_serial: "SN-9" }, { unit_serial: "SN-1" }]),
  );
  expect([dup.status, dup.code]).toEqual([422, "validation_failed"]);
  expect((dup.details.issues as any[]).map((i) => i.source.pointer)).toEqual(["/units/1/unit_serial"]);
  const taken = await refusal(sdk.units.create(id, [{ unit_serial: "SN-8" }, { unit_serial: "SN-1" }]));
  expect([taken.status, taken.code]).toEqual([409, "already_exists"]);
  expect((taken.details.issues as any[]).map((i) => i.source.pointer)).toEqual(["/units/1/unit_serial"]);
  const long = await refusal(sdk.units.create(id, [{ unit_serial: "x".repeat(71) }]));
  expect([long.status, long.code]).toEqual([422, "validation_failed"]);
  const status = await h.request(units(t, id), {
    key: t.testKey,
    body: { units: [{ unit_serial: "Z", status: "new" }] },
  });
  expect([status.status, envelope(status).code]).toEqual([422, "unit_status_not_allowed"]);
  expect(envelope(status).details.allowed).toEqual([
    "original",
    "repurposed",
    "re-used",
    "remanufactured",
    "waste",
  ]);

  const textile = await h.request(`/organizations/${t.organizationId}/passports`, {
    key: t.testKey,
    body: { category: "textile" },
  });
  const notBattery = await h.request(units(t, textile.body.id), {
    key: t.testKey,
    body: { units: [{ unit_serial: "A" }] },
  });
  expect([notBattery.status, envelope(notBattery).code]).toEqual([400, "invalid_request"]);
  expect((await sdk.units.list(id).toArray()).length).toBe(3);
});

it("refuses more units than the plan allows per passport", async () => {
  const trial = await h.tenant("Trial cells", "trial");
  const id = await battery(trial);
  const batch = (n: number, from: number) => ({
    units: Array.from({ length: n }, (_, i) => ({ unit_serial: `T-${from + i}` })),
  });
  h.expectStatus(await h.request(units(trial, id), { key: trial.testKey, body: batch(100, 0) }), 201);
  const over = await h.request(units(trial, id), { key: trial.testKey, body: batch(1, 100) });
  expect([over.status, envelope(over).code, envelope(over).details]).toEqual([
    402,
    "unit_limit_reached",
    { limit: 100, current: 100, requested: 1 },
  ]);
});

it("refuses to publish a battery passport carrying more units than the plan allows, and publishes once it does not", async () => {
  // A plan changed to a smaller one leaves a passport with more units than it allows: publish asks
  // variants-units for the passport's real unit count.
  const shrinking = await h.tenant("Shrinking cells", "pro");
  const created = await h.request(`/organizations/${shrinking.organizationId}/passports`, {
    key: shrinking.testKey,
    body: { category: "battery", data: publishableBattery({ gtin: "4006381333931" }) },
  });
  h.expectStatus(created, 201);
  const id = created.body.id as string;
  h.expectStatus(
    await h.request(units(shrinking, id), {
      key: shrinking.testKey,
      body: { units: Array.from({ length: 101 }, (_, i) => ({ unit_serial: `S-${i}` })) },
    }),
    201,
  );
  // The capability detail counts the real units, against the plan's limit per passport.
  const publishing = async () => {
    const caps = await h.request(`/organizations/${shrinking.organizationId}/capabilities`, {
      key: shrinking.testKey,
    });
    h.expectStatus(caps, 200);
    return caps.body.data.find((c: any) => c.id === "passport_publishing").detail;
  };
  expect(await publishing()).toMatchObject({ plan_id: "pro", unit_limit: 100000, units_used: 101 });
  const publish = () =>
    h.request(`/organizations/${shrinking.organizationId}/passports/${id}/publish`, {
      key: shrinking.testKey,
      method: "POST",
    });
  await planIs(shrinking, "trial", "trialing");
  expect(await publishing()).toMatchObject({ plan_id: "trial", unit_limit: 100, units_used: 101 });
  const refused = await publish();
  expect([refused.status, envelope(refused).code, envelope(refused).details]).toEqual([
    402,
    "unit_limit_reached",
    { passport_id: id, limit: 100, current: 101 },
  ]);
  // validate lists the same blocker.
  const record = await h.request(`/organizations/${shrinking.organizationId}/passports/${id}/validate`, {
    key: shrinking.testKey,
    method: "POST",
  });
  h.expectStatus(record, 200);
  expect(JSON.stringify(record.body)).toContain("unit_limit_reached");

  await planIs(shrinking, "pro", "active");
  const published = await publish();
  h.expectStatus(published, 200);
  expect(published.body.status).toBe("published");
});

it("moves a unit's status through its machine and keeps the history", async () => {
  const sdk = h.sdk(t.testKey).organization(t.organizationId);
  const id = await battery();
  const [u] = (await sdk.units.create(id, [{ unit_serial: "M-1" }])).data;
  const uid = u!.id;
  // No status yet: clearing changes nothing.
  expect((await sdk.units.changeStatus(id, uid, null)).status).toBeNull();
  expect((await sdk.units.changeStatus(id, uid, "original")).status).toBe("original");
  const moved = await sdk.units.changeStatus(id, uid, "repurposed");
  expect(moved.status_history!.map((c) => [c.from, c.to])).toEqual([
    [null, "original"],
    ["original", "repurposed"],
  ]);
  const required = await refusal(sdk.units.changeStatus(id, uid, null));
  expect([required.status, required.code]).toEqual([400, "unit_status_required"]);
  const back = await refusal(sdk.units.changeStatus(id, uid, "original"));
  expect([back.status, back.code]).toEqual([409, "unit_status_transition_forbidden"]);
  await sdk.units.changeStatus(id, uid, "re-used");
  const history = await refusal(sdk.units.changeStatus(id, uid, "repurposed"));
  expect([history.status, history.code]).toEqual([409, "unit_status_history_conflict"]);
  await sdk.units.changeStatus(id, uid, "waste");
  const after = await refusal(sdk.units.changeStatus(id, uid, "remanufactured"));
  expect([after.status, after.code]).toEqual([409, "unit_status_transition_forbidden"]);
  const bad = await h.request(`${units(t, id)}/${uid}/status`, {
    key: t.testKey,
    body: { status: "broken" },
  });
  expect([bad.status, envelope(bad).code]).toEqual([422, "unit_status_not_allowed"]);

  const feed = await h.request(
    `/organizations/${t.organizationId}/events?type=unit.status_changed&limit=100`,
    {
      key: t.testKey,
    },
  );
  expect(
    feed.body.data
      .filter((e: any) => e.related.id === uid)
      .map((e: any) => [e.related.previous_status, e.related.status]),
  ).toEqual([
    [null, "original"],
    ["original", "repurposed"],
    ["repurposed", "re-used"],
    ["re-used", "waste"],
  ]);
});

it("records readings: values hold the latest of each field, missing_fields the rest; every refusal has its code", async () => {
  const sdk = h.sdk(t.testKey).organization(t.organizationId);
  const id = await battery();
  const [u] = (await sdk.units.create(id, [{ unit_serial: "R-1" }])).data;
  const uid = u!.id;
  const first = await sdk.units.recordReading(id, uid, {
    field: "state_of_health",
    value: { value: 97, unit: "%" },
    source: "measurement",
    observed_on: "2026-01-10",
  });
  expect(first).toMatchObject({
    object: "unit_reading",
    field: "state_of_health",
    unit_id: uid,
    key_id: t.testKeyId,
  });
  await sdk.units.recordReading(id, uid, {
    field: "state_of_health",
    value: { value: 95, unit: "%" },
    source: "brand_statement",
    observed_on: "2026-03-01",
    note: "annual check",
  });
  await sdk.units.recordReading(id, uid, {
    field: "state_of_health",
    value: { value: 99, unit: "%" },
    source: "measurement",
    observed_on: "2025-12-01",
  });
  const [unit] = await sdk.units.list(id, { unit_serial: "R-1" }).toArray();
  expect(unit!.values.state_of_health).toMatchObject({
    value: { value: 95, unit: "%" },
    source: "brand_statement",
    observed_on: "2026-03-01",
  });
  expect(unit!.values.state_of_health!.unit_added_on).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  expect(unit!.missing_fields).not.toContain("state_of_health");
  expect(unit!.missing_fields).toContain("remaining_capacity");
  const readings = await sdk.units.readings(id, uid, { limit: 2 }).toArray();
  expect(readings.map((r) => r.observed_on)).toEqual(["2026-01-10", "2026-03-01", "2025-12-01"]);

  const post = (body: unknown) => h.request(`${units(t, id)}/${uid}/readings`, { key: t.testKey, body });
  const ok = {
    field: "state_of_health",
    value: { value: 90, unit: "%" },
    source: "measurement",
    observed_on: "2026-01-01",
  };
  const cases: [unknown, string][] = [
    [[1], "invalid_input"],
    [{ ...ok, extra: 1 }, "invalid_input"],
    [{ ...ok, observed_on: undefined }, "invalid_input"],
    [{ ...ok, field: "colour" }, "invalid_field"],
    [{ ...ok, value: { value: 120, unit: "%" } }, "invalid_value"],
    [{ ...ok, value: { value: 90, unit: "Ah" } }, "invalid_value"],
    [{ ...ok, source: "rumour" }, "invalid_source"],
    [{ ...ok, observed_on: "2026-02-30" }, "invalid_observed_on"],
    [{ ...ok, observed_on: "2999-01-01" }, "invalid_observed_on"],
    [{ ...ok, note: "" }, "invalid_note"],
    [{ ...ok, document_id: 5 }, "invalid_document_id"],
    [{ ...ok, document_id: "doc_unknown" }, "unit_reading_document_unavailable"],
  ];
  for (const [body, code] of cases) {
    const r = await post(body);
    expect([r.status, envelope(r).code]).toEqual([400, code]);
  }
  const none = await h.request(`${units(t, id)}/unit_none/readings`, { key: t.testKey, body: ok });
  expect([none.status, envelope(none).code]).toEqual([404, "resource_not_found"]);
});
