/**
 * `once` (effects.ts): an effect outside the database runs once per Idempotency-Key, however often the keyed
 * call's work runs. The effect here is a request to an HTTP server in this process that counts what it receives;
 * it stands in for object storage, a filing portal or another service (an upload, a filing, a GTIN reservation).
 * Like those, it deduplicates by the effect key it is given: it performs the first request of a key and answers
 * the same to every later one, so the tests can tell the requests the kit sent (`received`) from the effects that
 * took place (`performed`).
 *
 * The calls go through the kit's gRPC client to services started by startServiceUnderTest: one that opens the key
 * before the work, one with `openWithWork` (decision 0040), both declaring `idempotency` and creating none of the
 * kit's tables in their own migrations.
 */
import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { sql, type Migration } from "kysely";
import { ApiError } from "@dpp/contract";
import { passportV1 } from "@dpp/proto";
import type { RequestContext } from "../../src/context";
import { once } from "../../src/effects";
import type { CallContext } from "../../src/context";
import type { ImplOf } from "../../src/grpc";
import { transaction } from "../../src/idempotency";
import { defineService, type ServiceRuntime } from "../../src/service";
import { startServiceUnderTest, type UnderTest } from "../../src/testing";

// --- the remote system: counts requests, performs each effect key once ----------------------------------------

interface RemoteRequest {
  effectKey: string;
  run: number;
  msLeft: number;
}

class Remote {
  /** Requests received, by effect key. */
  readonly received = new Map<string, RemoteRequest[]>();
  /** The reference of each effect performed, by effect key. */
  readonly performed = new Map<string, string>();
  /** Every request's answer waits this long (lets concurrent calls overlap). */
  delayMs = 0;
  private n = 0;
  private server!: http.Server;
  url = "";

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      const effectKey = String(req.headers["idempotency-key"]);
      const seen = this.received.get(effectKey) ?? [];
      this.received.set(effectKey, seen);
      seen.push({
        effectKey,
        run: Number(req.headers["x-effect-run"]),
        msLeft: Number(req.headers["x-effect-ms-left"]),
      });
      let ref = this.performed.get(effectKey);
      if (ref === undefined) this.performed.set(effectKey, (ref = `ref_${++this.n}`));
      // A request may ask for the first answer of its effect key to be held back (the effect is performed at once).
      const slowFirst = Number(req.headers["x-slow-first-answer-ms"] ?? 0);
      const wait = seen.length === 1 && slowFirst > 0 ? slowFirst : this.delayMs;
      setTimeout(() => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ ref }));
      }, wait);
    });
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/effects`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  /** The effect keys that reached the remote system for one Idempotency-Key (a test's keys are unique). */
  keysOf(idempotencyKey: string): string[] {
    return [...this.received.keys()].filter((k) => effectKeysByIdempotencyKey.get(k) === idempotencyKey);
  }
}

const remote = new Remote();
/** Which Idempotency-Key each effect key was made for (recorded by the handler). */
const effectKeysByIdempotencyKey = new Map<string, string>();
/** How many times the work of each Idempotency-Key started (attempts included). */
const workRuns = new Map<string, number>();

// --- the services under test ----------------------------------------------------------------------------------

/** The work's own table, and a way to make a store transaction fail (`taken`) or the effect's record fail. */
const MIGRATIONS: Record<string, Migration> = {
  "0001_items": {
    async up(db) {
      await sql`create table item (idempotency_key text not null, name text not null, ref text not null)`.execute(
        db,
      );
      await sql`create table taken (name text primary key)`.execute(db);
      await sql`insert into taken values ('taken')`.execute(db);
      // The record of an effect fails for the keys listed here, as it would if the process died between the effect
      // and its record: the claim stays, without a result. (The kit's tables exist before this migration runs.)
      await sql`create table unrecordable (idempotency_key text primary key)`.execute(db);
      await sql`create function refuse_effect_record() returns trigger language plpgsql as $$
        begin
          if new.result is not null and exists (
            select from unrecordable u where u.idempotency_key = new.idempotency_key) then
            raise exception 'the process died before the effect was recorded';
          end if;
          return new;
        end $$`.execute(db);
      await sql`create trigger refuse_effect_record before update on idempotency_effect
        for each row execute function refuse_effect_record()`.execute(db);
    },
  },
};

/**
 * What a call's handler does, by the request's category:
 *  - "effect": the effect, then one write;
 *  - "refuse-after-write": the effect, one write, then a refusal: the first attempt is rolled back whole and the
 *    work runs again in a second attempt (decision 0028), which records the refusal;
 *  - "caught-failure": the effect, a store transaction that fails and is caught, then one write: the second
 *    attempt again;
 *  - "slow-first": as "effect", but the remote system holds back its first answer for 3 s;
 *  - "fail-first": as "effect", but the work's first run fails after its write (a failure that is not a refusal).
 */
function impl(rt: ServiceRuntime<Record<string, never>, any>): ImplOf<typeof passportV1.PassportService> {
  const unimplemented = Object.fromEntries(
    passportV1.PassportService.methods.map((m) => [
      m.localName,
      () => {
        throw new ApiError("resource_not_found");
      },
    ]),
  ) as unknown as ImplOf<typeof passportV1.PassportService>;
  const write = (call: CallContext, name: string, ref: string) =>
    transaction(rt.db, call.ctx, (trx) =>
      trx
        .insertInto("item")
        .values({ idempotency_key: call.ctx.idempotency?.key ?? "", name, ref })
        .execute(),
    );
  return {
    ...unimplemented,
    createPassport: async (req, call) => {
      const key = call.ctx.idempotency?.key ?? "";
      workRuns.set(key, (workRuns.get(key) ?? 0) + 1);
      const effect = await once(call, "upload", async (effectKey, run) => {
        effectKeysByIdempotencyKey.set(effectKey, call.ctx.idempotency?.key ?? "");
        expect(run.key).toBe(effectKey);
        expect(run.deadline).toBe(call.deadline);
        const res = await fetch(remote.url, {
          method: "POST",
          headers: {
            "idempotency-key": effectKey,
            "x-effect-run": String(run.run),
            "x-effect-ms-left": String(run.msLeft()),
            ...(req.category === "slow-first" ? { "x-slow-first-answer-ms": "3000" } : {}),
          },
          signal: run.signal,
        });
        const { ref } = (await res.json()) as { ref: string };
        return { ref, run: run.run };
      });
      if (req.category === "caught-failure")
        await transaction(rt.db, call.ctx, (trx) =>
          trx.insertInto("taken").values({ name: "taken" }).execute(),
        ).catch(() => undefined);
      await write(call, req.externalId ?? "", effect.ref);
      if (req.category === "fail-first" && workRuns.get(key) === 1)
        throw new Error("the work failed after the effect");
      if (req.category === "refuse-after-write")
        throw new ApiError("already_exists", "Refused after the effect and a write.", { ref: effect.ref });
      return { passport: { id: effect.ref, externalId: String(effect.run) } };
    },
  };
}

const definition = (name: string, idempotency: boolean | { openWithWork: boolean }) =>
  defineService({
    name,
    schema: name.replace(/-/g, "_"),
    migrations: MIGRATIONS,
    env: {},
    grpcPort: 50999,
    idempotency,
    start: (rt: ServiceRuntime<Record<string, never>, any>) => {
      rt.serve(passportV1.PassportService, impl(rt));
    },
  });

const keyOpenedFirst = definition("effects-open-first", true);
const keyOpenedWithWork = definition("effects-with-work", { openWithWork: true });
type Handle = UnderTest<typeof keyOpenedFirst>;

const handles: Record<string, Handle> = {};

beforeAll(async () => {
  await remote.start();
  handles.openFirst = await startServiceUnderTest(keyOpenedFirst);
  handles.withWork = await startServiceUnderTest(keyOpenedWithWork);
});

afterAll(async () => {
  for (const h of Object.values(handles)) await h.close();
  await remote.stop();
});

beforeEach(() => {
  remote.delayMs = 0;
});

// --- calls --------------------------------------------------------------------------------------------------

const org = `org_${randomBytes(4).toString("hex")}`;
const newKey = () => `k-${randomBytes(6).toString("hex")}`;

/** A keyed call's context: the same key and request give the same fingerprint, as the gateway makes it. */
function keyed(key: string, category: string, externalId: string): RequestContext {
  return {
    requestId: `req_${randomBytes(4).toString("hex")}`,
    organizationId: org,
    livemode: false,
    idempotency: {
      key,
      fingerprint: createHash("sha256").update(`${key}|${category}|${externalId}`).digest("hex"),
      callerOrganizationId: org,
    },
  };
}

type Answer = { ok: true; ref: string; run: string; replayed: boolean } | { ok: false; err: ApiError };

/** One call of CreatePassport under `key` (none: ""), from a client of its own (its own connection). */
async function send(
  h: Handle,
  key: string,
  category = "effect",
  externalId = "a",
  deadlineMs = 5000,
): Promise<Answer> {
  const client = h.client(passportV1.PassportService, { deadlineMs });
  const context = keyed(key, category, externalId);
  if (key === "") delete context.idempotency;
  try {
    const res = await client.createPassport({ category, externalId, dataJson: "" }, { context });
    return {
      ok: true,
      ref: res.passport!.id,
      run: res.passport!.externalId ?? "",
      replayed: context.outcome?.idempotentReplayed === true,
    };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { ok: false, err };
  } finally {
    client.close();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends until the answer is not resource_busy, as the SDK does (waiting less than Retry-After). */
async function sendUntilNotBusy(
  h: Handle,
  key: string,
  category = "effect",
  externalId = "a",
): Promise<Answer> {
  for (let i = 0; i < 200; i++) {
    const a = await send(h, key, category, externalId);
    if (a.ok || a.err.code !== "resource_busy") return a;
    await sleep(25);
  }
  throw new Error("the key stayed busy");
}

const items = async (h: Handle, key: string) =>
  (
    await sql<{
      name: string;
      ref: string;
    }>`select name, ref from item where idempotency_key = ${key}`.execute(h.db)
  ).rows;

const effectRow = async (h: Handle, key: string) =>
  (
    await sql<{ runs: number; recorded: boolean }>`
      select runs, result is not null as recorded from idempotency_effect where idempotency_key = ${key}`.execute(
      h.db,
    )
  ).rows;

/** The one effect key of `key` (asserted single), and what the remote system saw of it. */
function remoteOf(key: string) {
  const keys = remote.keysOf(key);
  expect(keys).toHaveLength(1);
  const effectKey = keys[0]!;
  return {
    effectKey,
    received: remote.received.get(effectKey) ?? [],
    performed: remote.performed.has(effectKey) ? 1 : 0,
    ref: remote.performed.get(effectKey),
  };
}

// --- the tests ----------------------------------------------------------------------------------------------

describe.each([
  ["the key opened before the work", "openFirst"],
  ["the key claimed with the work's first statement (openWithWork)", "withWork"],
])("once(), %s", (_label, which) => {
  const h = () => handles[which]!;

  it("runs the effect once when the same key is sent by eight clients at once, and every answer is its result", async () => {
    remote.delayMs = 150;
    const key = newKey();
    const answers = await Promise.all(Array.from({ length: 8 }, () => send(h(), key)));
    // Whoever did not run the work was told the key is busy (409, Retry-After), or got the recorded answer.
    for (const a of answers) if (!a.ok) expect(a.err.code).toBe("resource_busy");
    expect(answers.some((a) => !a.ok)).toBe(true);
    const settled = await Promise.all(answers.map((a) => (a.ok ? a : sendUntilNotBusy(h(), key))));
    const r = remoteOf(key);
    expect(r.received).toHaveLength(1);
    expect(r.performed).toBe(1);
    for (const a of settled) expect(a).toMatchObject({ ok: true, ref: r.ref, run: "1" });
    expect(await items(h(), key)).toEqual([{ name: "a", ref: r.ref }]);
    // With the key claimed by the work's first statement (here, once's read), the calls that found it claimed ran
    // the work up to that statement first.
    if (which === "withWork") expect(workRuns.get(key)).toBeGreaterThan(1);
    else expect(workRuns.get(key)).toBe(1);
    // A retry later replays the recorded answer: the work does not run (a claim with the work, here, fails and
    // the key is opened first: decision 0040), and neither does the effect.
    const again = await send(h(), key);
    expect(again).toMatchObject({ ok: true, ref: r.ref, replayed: true });
    expect(remoteOf(key).received).toHaveLength(1);
  });

  it("runs the effect once when a refusal after a write makes the work run a second time (decision 0028); the refusal replays and the effect's result stays recorded", async () => {
    const key = newKey();
    const first = await send(h(), key, "refuse-after-write");
    const r = remoteOf(key);
    expect(first).toMatchObject({ ok: false, err: { code: "already_exists", details: { ref: r.ref } } });
    expect(workRuns.get(key)).toBe(2);
    expect(r.received).toHaveLength(1);
    // The refusal is recorded without the work's write; the effect's result is kept with the key.
    expect(await items(h(), key)).toEqual([]);
    expect(await effectRow(h(), key)).toEqual([{ runs: 1, recorded: true }]);
    const replay = await send(h(), key, "refuse-after-write");
    expect(replay).toMatchObject({ ok: false, err: { code: "already_exists", details: { ref: r.ref } } });
    expect((replay as { err: ApiError }).err.headers["Idempotent-Replayed"]).toBe("true");
    expect(remoteOf(key).received).toHaveLength(1);
  });

  it("runs the effect once when a caught store failure makes the work run a second time (decision 0028)", async () => {
    const key = newKey();
    const a = await send(h(), key, "caught-failure");
    const r = remoteOf(key);
    expect(a).toMatchObject({ ok: true, ref: r.ref, run: "1" });
    expect(workRuns.get(key)).toBe(2);
    expect(r.received).toHaveLength(1);
    expect(await items(h(), key)).toEqual([{ name: "a", ref: r.ref }]);
  });

  it("gives each key an effect key of its own, and the effect the time left before the call's deadline", async () => {
    const key = newKey();
    const a = await send(h(), key, "effect", "a");
    const otherKey = newKey();
    const b = await send(h(), otherKey, "effect", "a");
    expect(a.ok && b.ok && a.ref !== b.ref).toBe(true);
    expect(remoteOf(key).effectKey).not.toBe(remoteOf(otherKey).effectKey);
    expect(remoteOf(key).effectKey).toMatch(/^ek_[A-Za-z0-9_-]{43}$/);
    // The effect was given the time left before the call's deadline (5 s here).
    const [req] = remoteOf(key).received;
    expect(req!.msLeft).toBeGreaterThan(0);
    expect(req!.msLeft).toBeLessThanOrEqual(5000);
  });

  it("after a crash between the effect and its record: the key is busy until the claim's lease ends, then the effect runs again with the same effect key, and the remote system performs it once", async () => {
    const key = newKey();
    await sql`insert into unrecordable values (${key})`.execute(h().db);
    // The effect reaches the remote system; its record fails, as if the process died there.
    const crashed = await send(h(), key, "effect", "a", 1500);
    expect(crashed).toMatchObject({
      ok: false,
      err: { code: "internal_error", details: { reason: "outcome_unknown" } },
    });
    const first = remoteOf(key);
    expect(first.received).toHaveLength(1);
    expect(await items(h(), key)).toEqual([]);
    expect(await effectRow(h(), key)).toEqual([{ runs: 1, recorded: false }]);
    await sql`delete from unrecordable where idempotency_key = ${key}`.execute(h().db);
    // The claim holds until the first call's deadline: the key is busy, and nothing runs.
    const busy = await send(h(), key);
    expect(busy).toMatchObject({ ok: false, err: { code: "resource_busy" } });
    expect(Number((busy as { err: ApiError }).err.headers["Retry-After"])).toBeGreaterThanOrEqual(1);
    expect(remoteOf(key).received).toHaveLength(1);
    // Once the lease ended, the next call runs the effect again, with the same effect key and a higher run.
    const done = await sendUntilNotBusy(h(), key);
    const r = remoteOf(key);
    expect(r.effectKey).toBe(first.effectKey);
    expect(r.received.map((q) => q.run)).toEqual([1, 2]);
    expect(r.performed).toBe(1);
    expect(done).toMatchObject({ ok: true, ref: r.ref, run: "2", replayed: false });
    expect(await items(h(), key)).toEqual([{ name: "a", ref: r.ref }]);
    expect(await effectRow(h(), key)).toEqual([{ runs: 2, recorded: true }]);
    expect(await send(h(), key)).toMatchObject({ ok: true, ref: r.ref, replayed: true });
    expect(remoteOf(key).received).toHaveLength(2);
  });

  it("after the effect's answer timed out at the call's deadline: the retry runs it again with the same effect key at once, and the remote system performs it once", async () => {
    const key = newKey();
    // The first call's effect is performed, but its answer comes after the call's 800 ms deadline.
    const timedOut = await send(h(), key, "slow-first", "a", 800);
    expect(timedOut).toMatchObject({
      ok: false,
      err: { code: "internal_error", details: { reason: "outcome_unknown" } },
    });
    expect(await items(h(), key)).toEqual([]);
    // The failed run released its claim: the retry runs the effect again at once.
    const done = await send(h(), key, "slow-first", "a");
    const r = remoteOf(key);
    expect(r.received.map((q) => q.run)).toEqual([1, 2]);
    expect(r.performed).toBe(1);
    expect(done).toMatchObject({ ok: true, ref: r.ref, run: "2" });
    expect(await items(h(), key)).toEqual([{ name: "a", ref: r.ref }]);
  });

  it("answers a failure after the effect outcome_unknown, and the retry under the same key finishes without running the effect again", async () => {
    const key = newKey();
    const failed = await send(h(), key, "fail-first");
    expect(failed).toMatchObject({
      ok: false,
      err: { code: "internal_error", details: { reason: "outcome_unknown" } },
    });
    expect((failed as { err: ApiError }).err.message).toContain("SAME Idempotency-Key");
    expect(await items(h(), key)).toEqual([]);
    const done = await send(h(), key, "fail-first");
    const r = remoteOf(key);
    expect(done).toMatchObject({ ok: true, ref: r.ref, run: "1" });
    expect(r.received).toHaveLength(1);
    expect(await items(h(), key)).toEqual([{ name: "a", ref: r.ref }]);
  });

  it("refuses the key for another request when its effect ran for the first one, and records nothing for it", async () => {
    const key = newKey();
    await sql`insert into unrecordable values (${key})`.execute(h().db);
    await send(h(), key, "effect", "a", 1000);
    await sql`delete from unrecordable where idempotency_key = ${key}`.execute(h().db);
    await sleep(1100);
    // The same key with another body: the effect belongs to the first request.
    const other = await send(h(), key, "effect", "b");
    expect(other).toMatchObject({ ok: false, err: { code: "idempotency_conflict" } });
    // The first request, retried, still finishes (the conflict was not recorded under the key).
    const done = await sendUntilNotBusy(h(), key, "effect", "a");
    expect(done).toMatchObject({ ok: true, run: "2" });
  });
});

describe("once() in a call without an Idempotency-Key", () => {
  it("runs the effect with the call, with an effect key of the call's own", async () => {
    const h = handles.openFirst!;
    const a = await send(h, "");
    const b = await send(h, "");
    expect(a.ok && b.ok && a.ref !== b.ref).toBe(true);
    expect(remote.keysOf("")).toHaveLength(2);
  });
});
