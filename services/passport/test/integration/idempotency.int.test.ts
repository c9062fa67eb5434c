/**
 * Idempotency kept with the write: the passport service records an Idempotency-Key's result in the same
 * transaction as the write, so a retry (after a timeout, a lost answer or a crashed gateway) replays the
 * committed result and never writes twice.
 */
import { createHash, randomBytes } from "node:crypto";
import { sql } from "kysely";
import { type RequestContext } from "@dpp/kit";
import {
  CONTEXT_METADATA_KEY,
  contextToWire,
  createContextSigner,
  IDEMPOTENCY_FINGERPRINT_METADATA_KEY,
  IDEMPOTENCY_KEY_METADATA_KEY,
  reapIdempotencyRecords,
  REQUEST_ID_METADATA_KEY,
} from "@dpp/kit/internal";
import { metadataOf, rawUnaryCall, signedToken } from "@dpp/kit/testing";
import { passportV1 } from "@dpp/proto";
import {
  context,
  createRequest,
  refusal,
  startHarness,
  tenantRowCounts,
  testTenant,
  type CreateBody,
  type Harness,
  type Tenant,
} from "../harness";

let h: Harness;
beforeAll(async () => {
  h = await startHarness("passport_idem");
});
afterAll(async () => {
  await h?.close();
});

const fingerprint = (text: string) => createHash("sha256").update(text).digest("hex");

/** The context the gateway sends for a request under `key` whose canonical form is `request`. */
function keyed(t: Tenant, key: string, request: unknown): RequestContext {
  return {
    ...context(t),
    idempotency: {
      key,
      fingerprint: fingerprint(JSON.stringify(request)),
      callerOrganizationId: t.organizationId,
    },
  };
}

const body = (name: string): CreateBody => ({ category: "textile", data: { product_name: name } });
const create = (ctx: RequestContext, b: CreateBody) =>
  h.client.createPassport(createRequest(b), { context: ctx });
const newKey = () => `key-${randomBytes(6).toString("hex")}`;

describe("a create under an Idempotency-Key", () => {
  it("runs once: a retry replays the committed passport, marked as a replay, with one row and one event", async () => {
    const t = testTenant();
    const key = newKey();
    const first = keyed(t, key, body("Shirt"));
    const a = await create(first, body("Shirt"));
    expect(first.outcome?.idempotentReplayed).toBeUndefined();
    const retry = keyed(t, key, body("Shirt"));
    const b = await create(retry, body("Shirt"));
    expect(retry.outcome?.idempotentReplayed).toBe(true);
    expect(b.passport).toEqual(a.passport);
    expect(await tenantRowCounts(h, t)).toMatchObject({ passport: 1, outbox: 1 });
  });

  it("refuses the same key with another request (idempotency_conflict), and writes nothing", async () => {
    const t = testTenant();
    const key = newKey();
    await create(keyed(t, key, body("One")), body("One"));
    const err = await refusal(create(keyed(t, key, body("Two")), body("Two")));
    expect(err.code).toBe("idempotency_conflict");
    expect(await tenantRowCounts(h, t)).toMatchObject({ passport: 1, outbox: 1 });
  });

  it("is scoped to the tenant and the calling organization: the same key elsewhere is another key", async () => {
    const t = testTenant();
    const other = testTenant();
    const key = newKey();
    await create(keyed(t, key, body("A")), body("A"));
    const elsewhere = keyed(other, key, body("A"));
    await create(elsewhere, body("A"));
    expect(elsewhere.outcome?.idempotentReplayed).toBeUndefined();
    const viaGrant = { ...keyed(t, key, body("A")) };
    viaGrant.idempotency = { ...viaGrant.idempotency!, callerOrganizationId: "org_manager" };
    await create(viaGrant, body("A"));
    expect(viaGrant.outcome?.idempotentReplayed).toBeUndefined();
    expect((await tenantRowCounts(h, t)).passport).toBe(2);
  });

  it("answers concurrent attempts with one passport: the others are busy (Retry-After) or replay it", async () => {
    const t = testTenant();
    const key = newKey();
    const outcomes = await Promise.allSettled(
      Array.from({ length: 6 }, () => create(keyed(t, key, body("Race")), body("Race"))),
    );
    const ok = outcomes.filter((o) => o.status === "fulfilled").map((o) => o.value.passport!.id);
    expect(new Set(ok).size).toBe(1);
    for (const o of outcomes)
      if (o.status === "rejected") {
        expect(o.reason.code).toBe("resource_busy");
        expect(o.reason.headers["Retry-After"]).toBe("1");
      }
    expect(await tenantRowCounts(h, t)).toMatchObject({ passport: 1, outbox: 1 });
  });

  it("records a refusal and replays it, marked, without running again", async () => {
    const t = testTenant();
    const key = newKey();
    const bad: CreateBody = { category: "textile", data: { product_name: 42 } };
    const first = await refusal(create(keyed(t, key, bad), bad));
    expect(first.code).toBe("validation_failed");
    expect(first.headers["Idempotent-Replayed"]).toBeUndefined();
    const again = await refusal(create(keyed(t, key, bad), bad));
    expect(again.code).toBe("validation_failed");
    expect(again.details).toEqual(first.details);
    expect(again.headers["Idempotent-Replayed"]).toBe("true");
    expect(await tenantRowCounts(h, t)).toMatchObject({ passport: 0, outbox: 0 });
  });

  it("does not record a failure that is not a refusal: the same key runs again", async () => {
    const t = testTenant();
    const key = newKey();
    // The write fails inside the database (a trigger the test adds), not as a refusal of the request.
    await sql`create or replace function passport_test_fail() returns trigger language plpgsql as $$
      begin if new.organization_id = ${sql.lit(t.organizationId)} then raise exception 'disk on fire'; end if; return new; end $$`.execute(
      h.sql,
    );
    await sql`create trigger passport_test_fail before insert on passport for each row execute function passport_test_fail()`.execute(
      h.sql,
    );
    try {
      const err = await refusal(create(keyed(t, key, body("Later")), body("Later")));
      expect(err.code).toBe("internal_error");
    } finally {
      await sql`drop trigger passport_test_fail on passport`.execute(h.sql);
    }
    const retry = keyed(t, key, body("Later"));
    const ok = await create(retry, body("Later"));
    expect(ok.passport?.id).toMatch(/^pp_/);
    expect(retry.outcome?.idempotentReplayed).toBeUndefined();
    expect(await tenantRowCounts(h, t)).toMatchObject({ passport: 1, outbox: 1 });
  });
});

describe("a conditional write under an Idempotency-Key", () => {
  it("records a 412 and replays it with the version the first attempt saw", async () => {
    const t = testTenant();
    const p = await h.create(t, body("Versioned"));
    const key = newKey();
    const patch = {
      id: p.id,
      patchJson: JSON.stringify({ data: { product_name: "X" } }),
      expectedVersion: 9,
    };
    const first = await refusal(h.client.updatePassport(patch, { context: keyed(t, key, patch) }));
    expect(first.code).toBe("precondition_failed");
    // The passport moves on meanwhile; the key still answers what it answered.
    await h.client.updatePassport(
      { id: p.id, patchJson: JSON.stringify({ data: { product_name: "Y" } }) },
      { context: context(t) },
    );
    const again = await refusal(h.client.updatePassport(patch, { context: keyed(t, key, patch) }));
    expect(again.code).toBe("precondition_failed");
    expect(again.details).toEqual(first.details);
    expect(again.headers["Idempotent-Replayed"]).toBe("true");
  });
});

describe("records", () => {
  it("are kept 24 hours: an older one is reaped, and until then ignored", async () => {
    const t = testTenant();
    const key = newKey();
    await create(keyed(t, key, body("Old")), body("Old"));
    await sql`update idempotency set created_at = now() - interval '25 hours'
      where organization_id = ${t.organizationId} and idempotency_key = ${key}`.execute(h.sql);
    // Past the window the key is free again: a new request under it runs.
    const later = keyed(t, key, body("New"));
    await create(later, body("New"));
    expect(later.outcome?.idempotentReplayed).toBeUndefined();
    await sql`update idempotency set created_at = now() - interval '25 hours'
      where organization_id = ${t.organizationId} and idempotency_key = ${key}`.execute(h.sql);
    expect(await reapIdempotencyRecords(h.sql)).toBeGreaterThanOrEqual(1);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from idempotency
      where organization_id = ${t.organizationId}`.execute(h.sql);
    expect(rows[0]!.n).toBe(0);
  });
});

describe("the Idempotency-Key beside the context token", () => {
  const CREATE = `/${passportV1.PassportService.typeName}/CreatePassport`;
  const rawCreate = (b: CreateBody, entries: Array<[string, string]>) =>
    rawUnaryCall(
      h.service.address,
      passportV1.PassportService,
      "createPassport",
      createRequest(b),
      metadataOf(entries),
    );

  it("refuses a keyed write whose key or fingerprint is missing or malformed, and writes nothing", async () => {
    const t = testTenant();
    const ctx = keyed(t, newKey(), body("Half"));
    const gateway = createContextSigner({ issuer: "gateway", privateKey: h.service.callerKeys.privateKey });
    const token = gateway.sign(ctx, { audience: "passport", method: CREATE, deadline: Date.now() + 5000 });
    const withToken: Array<[string, string]> = [
      [CONTEXT_METADATA_KEY, token],
      [REQUEST_ID_METADATA_KEY, "req_half"],
    ];
    for (const beside of [
      [],
      [[IDEMPOTENCY_KEY_METADATA_KEY, ctx.idempotency!.key]],
      [
        [IDEMPOTENCY_KEY_METADATA_KEY, ctx.idempotency!.key],
        [IDEMPOTENCY_FINGERPRINT_METADATA_KEY, "0".repeat(63)],
      ],
    ] as Array<Array<[string, string]>>)
      expect(await rawCreate(body("Half"), [...withToken, ...beside])).toMatchObject({
        ok: false,
        status: "UNAUTHENTICATED",
      });
    expect(await tenantRowCounts(h, t)).toMatchObject({ passport: 0, outbox: 0 });
  });

  it("accepts a keyed create of a gateway of the previous version (key and fingerprint signed) and replays it to a retry of the current one", async () => {
    const t = testTenant();
    const key = newKey();
    const ctx = keyed(t, key, body("Old"));
    const i = ctx.idempotency!;
    const iat = Date.now();
    const earlier = signedToken(
      {
        iss: "gateway",
        aud: "passport",
        rpc: CREATE,
        iat,
        exp: iat + 5000,
        ctx: {
          ...contextToWire(ctx),
          idempotency: { key, fingerprint: i.fingerprint, caller_organization_id: i.callerOrganizationId },
        },
      },
      h.service.callerKeys.privateKey,
    );
    const first = await rawCreate(body("Old"), [
      [CONTEXT_METADATA_KEY, earlier],
      [REQUEST_ID_METADATA_KEY, "req_old"],
    ]);
    if (!first.ok) throw new Error(`the earlier gateway's create was refused: ${first.status}`);
    const retry = keyed(t, key, body("Old"));
    const again = await create(retry, body("Old"));
    expect(retry.outcome?.idempotentReplayed).toBe(true);
    expect(again.passport).toEqual(first.response.passport);
    // Beside a token that signed its key, another key is refused: the signed one is not overridden.
    const other = await rawCreate(body("Old"), [
      [CONTEXT_METADATA_KEY, earlier],
      [REQUEST_ID_METADATA_KEY, "req_other"],
      [IDEMPOTENCY_KEY_METADATA_KEY, newKey()],
      [IDEMPOTENCY_FINGERPRINT_METADATA_KEY, i.fingerprint],
    ]);
    expect(other).toMatchObject({ ok: false, status: "UNAUTHENTICATED" });
    expect(await tenantRowCounts(h, t)).toMatchObject({ passport: 1, outbox: 1 });
  });
});
