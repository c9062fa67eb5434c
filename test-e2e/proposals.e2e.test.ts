/**
 * Change proposals through the API (docs/decisions/0057): a connector proposes fields for a published passport;
 * every refusal (proposal_requires_assistant, wrong_status, no_changes, validation_failed, resource_not_found),
 * the states a read shows (pending, out_of_date with `moved`, expired, withdrawn), the Idempotency-Key replay,
 * the events in the feed, and the SDK's methods. Accepting and rejecting are a person's, on the review page
 * (review.browser.e2e.test.ts).
 */
import pg from "pg";
import { DppError } from "@dpp/client";
import { envelope, startHarness, type Harness, type Tenant } from "./support/harness";
import { publishableTextile } from "./support/fixtures";

jest.setTimeout(180_000);

let h: Harness;
let t: Tenant;
let connector: string;
let gtinSeq = 0;

/** A GTIN-13 with a valid check digit, different for each call. */
function nextGtin(): string {
  const body = `400638${String(1000000 + ++gtinSeq).slice(1)}`;
  const sum = body
    .split("")
    .reverse()
    .reduce((s, d, i) => s + Number(d) * (i % 2 === 0 ? 3 : 1), 0);
  return body + ((10 - (sum % 10)) % 10);
}

async function passport(publish: boolean): Promise<string> {
  const created = await h.request(`/organizations/${t.organizationId}/passports`, {
    key: t.testKey,
    body: { category: "textile", data: publishableTextile({ product_name: "Wool coat", gtin: nextGtin() }) },
  });
  h.expectStatus(created, 201);
  const id = created.body.id as string;
  if (publish) {
    const published = await h.request(`/organizations/${t.organizationId}/passports/${id}/publish`, {
      key: t.testKey,
      method: "POST",
    });
    h.expectStatus(published, 200);
  }
  return id;
}

const propose = (id: string, fields: unknown, key = connector, headers: Record<string, string> = {}) =>
  h.request(`/organizations/${t.organizationId}/passports/${id}/proposals`, {
    key,
    body: { fields },
    headers,
  });

async function withDb<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: h.db.url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  h = await startHarness("proposals");
  t = await h.tenant("Acme", "pro");
  connector = (
    await h.admin.createKey({ organizationId: t.organizationId, livemode: false, kind: "connector" })
  ).key;
});
afterAll(async () => {
  await h?.close();
});

it("records a connector's proposal as pending, replays it under the same key, and reads it back", async () => {
  const id = await passport(true);
  const res = await propose(id, { data: { product_name: "Wool coat, navy" } }, connector, {
    "idempotency-key": "prop-1",
  });
  h.expectStatus(res, 201);
  expect(res.body).toEqual({
    object: "passport_proposal",
    id: expect.stringMatching(/^prop_/),
    name: `organizations/${t.organizationId}/proposals/${res.body.id}`,
    passport_id: id,
    state: "pending",
    moved: [],
    fields: { data: { product_name: "Wool coat, navy" } },
    review_url: expect.stringMatching(
      new RegExp(`/organizations/${t.organizationId}/proposals/${res.body.id}$`),
    ),
    requested_at: expect.any(String),
    expires_at: expect.any(String),
    decided_at: null,
    livemode: false,
  });
  // 14 days to decide.
  expect(Date.parse(res.body.expires_at) - Date.parse(res.body.requested_at)).toBe(14 * 86_400_000);

  const again = await propose(id, { data: { product_name: "Wool coat, navy" } }, connector, {
    "idempotency-key": "prop-1",
  });
  expect(again.status).toBe(201);
  expect(again.headers.get("idempotent-replayed")).toBe("true");
  expect(again.body.id).toBe(res.body.id);

  // Any credential of the organization with passports:read reads it; the passport is unchanged.
  const read = await h.request(`/organizations/${t.organizationId}/proposals/${res.body.id}`, {
    key: t.testKey,
  });
  h.expectStatus(read, 200);
  expect(read.body).toEqual(res.body);
  const p = await h.request(`/organizations/${t.organizationId}/passports/${id}`, { key: t.testKey });
  expect(p.body.data.product_name).toBe("Wool coat");
  expect(p.body.version).toBe(2);

  // Not in the other mode, not for another organization.
  const otherMode = await h.request(`/organizations/${t.organizationId}/proposals/${res.body.id}`, {
    key: t.liveKey,
  });
  expect(otherMode.status).toBe(404);
  expect(envelope(otherMode).code).toBe("resource_not_found");
  const stranger = await h.tenant("Stranger");
  const foreign = await h.request(`/organizations/${stranger.organizationId}/proposals/${res.body.id}`, {
    key: stranger.testKey,
  });
  expect(foreign.status).toBe(404);
  expect(envelope(foreign).code).toBe("resource_not_found");
});

it("refuses every credential kind but a connector with proposal_requires_assistant, on create and withdraw", async () => {
  const id = await passport(true);
  const bySecret = await propose(id, { data: { product_name: "Other" } }, t.testKey);
  expect(bySecret.status).toBe(403);
  expect(envelope(bySecret)).toMatchObject({
    code: "proposal_requires_assistant",
    details: { credential_kind: "secret" },
  });
  const made = await propose(id, { data: { product_name: "Other" } });
  h.expectStatus(made, 201);
  const withdraw = await h.request(`/organizations/${t.organizationId}/proposals/${made.body.id}/withdraw`, {
    key: t.testKey,
    method: "POST",
  });
  expect(withdraw.status).toBe(403);
  expect(envelope(withdraw).code).toBe("proposal_requires_assistant");
});

it("refuses a passport that is not published (wrong_status), fields that change nothing (no_changes), invalid fields and unknown passports", async () => {
  const draft = await passport(false);
  const onDraft = await propose(draft, { data: { product_name: "Other" } });
  expect(onDraft.status).toBe(409);
  expect(envelope(onDraft)).toMatchObject({
    code: "wrong_status",
    details: { passport_id: draft, status: "draft", allowed_statuses: ["published"] },
  });

  const id = await passport(true);
  const same = await propose(id, { data: { product_name: "Wool coat" } });
  expect(same.status).toBe(422);
  expect(envelope(same)).toMatchObject({
    code: "no_changes",
    details: { passport_id: id, fields: ["product_name"] },
  });
  const empty = await propose(id, {});
  expect(empty.status).toBe(422);
  expect(envelope(empty).code).toBe("no_changes");

  const unknownField = await propose(id, { data: { colour: "red" } });
  expect(unknownField.status).toBe(422);
  expect(envelope(unknownField)).toMatchObject({
    code: "validation_failed",
    details: { issues: [{ source: { pointer: "/fields/data/colour" }, rule: "unknown_field" }] },
  });
  const readOnly = await propose(id, { status: "draft" });
  expect(envelope(readOnly).details.issues[0]).toMatchObject({
    source: { pointer: "/fields/status" },
    rule: "read_only",
  });
  const missing = await h.request(`/organizations/${t.organizationId}/passports/${id}/proposals`, {
    key: connector,
    body: {},
  });
  expect(missing.status).toBe(422);
  expect(envelope(missing).details.issues[0]).toMatchObject({
    source: { pointer: "/fields" },
    rule: "required",
  });
  const notObject = await propose(id, "rename");
  expect(envelope(notObject).details.issues[0]).toMatchObject({
    source: { pointer: "/fields" },
    rule: "type",
  });

  const nowhere = await propose("pp_nothing", { data: { product_name: "Other" } });
  expect(nowhere.status).toBe(404);
  expect(envelope(nowhere).code).toBe("resource_not_found");
  const noProposal = await h.request(`/organizations/${t.organizationId}/proposals/prop_nothing`, {
    key: t.testKey,
  });
  expect(noProposal.status).toBe(404);
  expect(envelope(noProposal)).toMatchObject({
    code: "resource_not_found",
    details: { proposal_id: "prop_nothing" },
  });
});

it("shows out_of_date with the fields that moved when the passport changes a proposed field", async () => {
  const id = await passport(true);
  const made = await propose(id, { data: { product_name: "Coat A", care_instructions: "Dry clean only" } });
  h.expectStatus(made, 201);
  // A change to a field the proposal does not name leaves it pending.
  const other = await h.request(`/organizations/${t.organizationId}/passports/${id}`, {
    key: t.testKey,
    method: "PATCH",
    body: { external_id: "coat-a" },
  });
  h.expectStatus(other, 200);
  const still = await h.request(`/organizations/${t.organizationId}/proposals/${made.body.id}`, {
    key: connector,
  });
  expect(still.body).toMatchObject({ state: "pending", moved: [] });

  const moved = await h.request(`/organizations/${t.organizationId}/passports/${id}`, {
    key: t.testKey,
    method: "PATCH",
    body: { data: { product_name: "Coat B" } },
  });
  h.expectStatus(moved, 200);
  const seen = await h.request(`/organizations/${t.organizationId}/proposals/${made.body.id}`, {
    key: connector,
  });
  expect(seen.body).toMatchObject({ state: "out_of_date", moved: ["product_name"], decided_at: null });

  // Nobody decided it: the connector may still withdraw it.
  const withdrawn = await h.request(`/organizations/${t.organizationId}/proposals/${made.body.id}/withdraw`, {
    key: connector,
    method: "POST",
  });
  h.expectStatus(withdrawn, 200);
  expect(withdrawn.body).toMatchObject({ state: "withdrawn", decided_at: expect.any(String) });
});

it("withdraws a pending proposal once; a withdrawn or expired one is wrong_status", async () => {
  const id = await passport(true);
  const made = await propose(id, { data: { product_name: "Coat C" } });
  const path = `/organizations/${t.organizationId}/proposals/${made.body.id}/withdraw`;
  const first = await h.request(path, {
    key: connector,
    method: "POST",
    headers: { "idempotency-key": "w-1" },
  });
  h.expectStatus(first, 200);
  expect(first.body).toMatchObject({ id: made.body.id, state: "withdrawn", decided_at: expect.any(String) });
  const replay = await h.request(path, {
    key: connector,
    method: "POST",
    headers: { "idempotency-key": "w-1" },
  });
  expect(replay.headers.get("idempotent-replayed")).toBe("true");
  expect(replay.body).toEqual(first.body);
  const twice = await h.request(path, { key: connector, method: "POST" });
  expect(twice.status).toBe(409);
  expect(envelope(twice)).toMatchObject({
    code: "wrong_status",
    details: { proposal_id: made.body.id, state: "withdrawn" },
  });
  const withBody = await h.request(path, { key: connector, body: { reason: "x" } });
  expect(withBody.status).toBe(422);

  // Expiry is seen on read once expires_at has passed (moved into the past here instead of waiting 14 days).
  const late = await propose(id, { data: { product_name: "Coat D" } });
  await withDb((c) =>
    c.query("update passport.proposal set expires_at = now() - interval '1 second' where id = $1", [
      late.body.id,
    ]),
  );
  const expired = await h.request(`/organizations/${t.organizationId}/proposals/${late.body.id}`, {
    key: connector,
  });
  expect(expired.body).toMatchObject({ state: "expired", moved: [], decided_at: null });
  const tooLate = await h.request(`/organizations/${t.organizationId}/proposals/${late.body.id}/withdraw`, {
    key: connector,
    method: "POST",
  });
  expect(tooLate.status).toBe(409);
  expect(envelope(tooLate).details.state).toBe("expired");
});

it("records proposal.created and proposal.withdrawn in the feed, and the SDK has a typed method for each endpoint", async () => {
  const id = await passport(true);
  const sdk = h.sdk(connector).organization(t.organizationId);
  const made = await sdk.proposals.create(id, { data: { product_name: "Coat E" } });
  expect(made.lastResponse.status).toBe(201);
  expect(made.state).toBe("pending");
  const read = await sdk.proposals.get(made.id);
  expect(read.fields).toEqual({ data: { product_name: "Coat E" } });
  const withdrawn = await sdk.proposals.withdraw(made.id);
  expect(withdrawn.state).toBe("withdrawn");
  await expect(sdk.proposals.withdraw(made.id)).rejects.toMatchObject({ code: "wrong_status", status: 409 });
  await expect(
    h
      .sdk(t.testKey)
      .organization(t.organizationId)
      .proposals.create(id, { data: { product_name: "X" } }),
  ).rejects.toBeInstanceOf(DppError);

  const types: string[] = [];
  for (let i = 0; i < 50 && !types.includes("proposal.withdrawn"); i++) {
    const feed = await h.request(`/organizations/${t.organizationId}/events?limit=100`, { key: t.testKey });
    types.length = 0;
    for (const e of feed.body.data as { type: string; related: { id: string; state: string } }[])
      if (e.related.id === made.id) types.push(`${e.type}:${e.related.state}`);
    if (!types.includes("proposal.withdrawn:withdrawn")) await new Promise((r) => setTimeout(r, 100));
    else break;
  }
  expect(types).toEqual(["proposal.created:pending", "proposal.withdrawn:withdrawn"]);
});
