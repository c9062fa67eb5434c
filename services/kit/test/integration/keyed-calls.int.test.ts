/**
 * The keyed-call contract enforced by the kit (docs/writes-under-a-key.md):
 *  - keys fail closed: a call that carries an Idempotency-Key to a service that does not declare idempotency is
 *    refused, logged, and never runs;
 *  - with the checks on (startServiceUnderTest turns them on; KIT_TEST_CHECKS=1 elsewhere), a keyed call whose work
 *    writes outside its transaction, or calls another service before its key is claimed (openWithWork), fails and
 *    records nothing under its key.
 */
import { createHash, randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import pino from "pino";
import { sql, type Migration } from "kysely";
import { ApiError } from "@dpp/contract";
import { eventsV1, passportV1 } from "@dpp/proto";
import type { RequestContext } from "../../src/context";
import { once } from "../../src/effects";
import type { CallContext } from "../../src/context";
import { addService, createClient, type ClientOf, type ImplOf } from "../../src/grpc";
import { singleStatement, transaction } from "../../src/idempotency";
import { createContextSigner, createContextVerifier, generateInternalKeyPair } from "../../src/internal-auth";
import { createLogger } from "../../src/logger";
import { startGrpcServer, type GrpcServerHandle } from "../../src/server";
import { defineService, type ServiceRuntime } from "../../src/service";
import { startServiceUnderTest, type UnderTest } from "../../src/testing";

const ITEMS: Record<string, Migration> = {
  "0001_items": {
    async up(db) {
      await sql`create table item (request_key text not null, how text not null)`.execute(db);
    },
  },
};

const unimplemented = Object.fromEntries(
  passportV1.PassportService.methods.map((m) => [
    m.localName,
    () => {
      throw new ApiError("resource_not_found");
    },
  ]),
) as unknown as ImplOf<typeof passportV1.PassportService>;

// --- another service the handlers call: a fake EventsService, trusting the tests' caller -----------------------

const keys = generateInternalKeyPair();
let other: GrpcServerHandle;
let otherClient: ClientOf<typeof eventsV1.EventsService>;
let otherCalls = 0;

/** A context for the other service: the call's tenant, no Idempotency-Key. */
const unkeyedOf = (ctx: RequestContext): RequestContext => ({
  requestId: ctx.requestId,
  organizationId: ctx.organizationId,
  livemode: ctx.livemode,
});

// --- the services under test --------------------------------------------------------------------------------

/**
 * CreatePassport's work, by the request's category: how it writes its item, and when it calls the other service.
 */
function impl(rt: ServiceRuntime<Record<string, never>, any>): ImplOf<typeof passportV1.PassportService> {
  const insert = (call: CallContext, how: string) => (trx: any) =>
    trx
      .insertInto("item")
      .values({ request_key: call.ctx.idempotency?.key ?? call.ctx.requestId, how })
      .execute();
  const own = (call: CallContext, how: string) => transaction(rt.db, call.ctx, insert(call, how));
  const callOther = (call: CallContext) =>
    otherClient.listEvents({}, { context: unkeyedOf(call.ctx) }).then(() => otherCalls++);
  return {
    ...unimplemented,
    createPassport: async (req, call) => {
      const how = req.category;
      switch (how) {
        case "own":
          await own(call, how);
          break;
        case "null":
          await transaction(rt.db, null, insert(call, how));
          break;
        case "copy":
          await transaction(rt.db, { ...call.ctx }, insert(call, how));
          break;
        case "single-null":
          await singleStatement(rt.db, null, insert(call, how));
          break;
        case "caught":
          await transaction(rt.db, null, insert(call, how)).catch(() => undefined);
          await own(call, how);
          break;
        case "call-first":
          await callOther(call);
          await own(call, how);
          break;
        case "call-caught":
          await callOther(call).catch(() => undefined);
          await own(call, how);
          break;
        case "write-first":
          await own(call, how);
          await callOther(call);
          break;
        case "call-in-once":
          await once(call, "other", () => callOther(call));
          await own(call, how);
          break;
        default:
          throw new ApiError("invalid_request");
      }
      return { passport: { id: `pp_${how}` } };
    },
  };
}

const definition = (name: string, idempotency?: boolean | { openWithWork: boolean }) =>
  defineService({
    name,
    schema: name.replace(/-/g, "_"),
    migrations: ITEMS,
    env: {},
    grpcPort: 50999,
    idempotency,
    start: (rt: ServiceRuntime<Record<string, never>, any>) => {
      rt.serve(passportV1.PassportService, impl(rt));
    },
  });

const unkeyedService = definition("keys-undeclared");
const keyedService = definition("keys-checked", true);
const keyedWithWork = definition("keys-checked-with-work", { openWithWork: true });
type Handle = UnderTest<typeof keyedService>;
const handles: Record<string, Handle> = {};

beforeAll(async () => {
  const log = createLogger("keyed-calls-other", "silent");
  const verifier = createContextVerifier({ audience: "events", trusted: { gateway: [keys.publicKey] } });
  other = await startGrpcServer("127.0.0.1:0", log, (server) => {
    addService(
      server,
      eventsV1.EventsService,
      { listEvents: () => ({ events: [] }), readFeed: () => ({ events: [] }) } as never,
      log,
      verifier,
    );
    return [eventsV1.EventsService.typeName];
  });
  otherClient = createClient(eventsV1.EventsService, `127.0.0.1:${other.port}`, {
    signer: createContextSigner({ issuer: "gateway", privateKey: keys.privateKey }),
    audience: "events",
  });
  handles.undeclared = await startServiceUnderTest(unkeyedService);
  handles.checked = await startServiceUnderTest(keyedService);
  handles.withWork = await startServiceUnderTest(keyedWithWork);
});

afterAll(async () => {
  otherClient?.close();
  for (const h of Object.values(handles)) await h.close();
  await other?.shutdown(1000);
});

// --- calls ----------------------------------------------------------------------------------------------------

const org = `org_${randomBytes(4).toString("hex")}`;
const newKey = () => `k-${randomBytes(6).toString("hex")}`;

function context(key?: string, category = ""): RequestContext {
  const ctx: RequestContext = {
    requestId: `req_${randomBytes(4).toString("hex")}`,
    organizationId: org,
    livemode: false,
  };
  if (key)
    ctx.idempotency = {
      key,
      fingerprint: createHash("sha256").update(`${key}|${category}`).digest("hex"),
      callerOrganizationId: org,
    };
  return ctx;
}

async function send(h: Handle, category: string, key?: string): Promise<{ id: string } | ApiError> {
  const client = h.client(passportV1.PassportService);
  try {
    const res = await client.createPassport({ category, dataJson: "" }, { context: context(key, category) });
    return { id: res.passport!.id };
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  } finally {
    client.close();
  }
}

const itemsOf = async (h: Handle, requestKey: string) =>
  (await sql<{ how: string }>`select how from item where request_key = ${requestKey}`.execute(h.db)).rows.map(
    (r) => r.how,
  );

const recordsOf = async (h: Handle, key: string) =>
  (
    await sql<{
      n: number;
    }>`select count(*)::int as n from idempotency where idempotency_key = ${key}`.execute(h.db)
  ).rows[0]!.n;

// --- keys fail closed -----------------------------------------------------------------------------------------

describe("a call with an Idempotency-Key to a service that does not declare idempotency", () => {
  it("is refused with configuration_error naming the service and the method, and its handler never runs", async () => {
    const h = handles.undeclared!;
    const key = newKey();
    for (let i = 0; i < 2; i++) {
      const refused = await send(h, "own", key);
      expect(refused).toBeInstanceOf(ApiError);
      expect(refused).toMatchObject({
        code: "configuration_error",
        details: {
          reason: "idempotency_not_declared",
          service: "dpp.passport.v1.PassportService",
          method: "CreatePassport",
        },
      });
      expect((refused as ApiError).message).toContain("dpp.passport.v1.PassportService/CreatePassport");
    }
    expect(await itemsOf(h, key)).toEqual([]);
  });

  it("leaves calls without a key as they were", async () => {
    const h = handles.undeclared!;
    const ctx = context();
    const client = h.client(passportV1.PassportService);
    try {
      await client.createPassport({ category: "own", dataJson: "" }, { context: ctx });
    } finally {
      client.close();
    }
    expect(await itemsOf(h, ctx.requestId)).toEqual(["own"]);
  });

  it("is logged as an error with the service and the method", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    const log = pino({ level: "info" }, sink);
    const verifier = createContextVerifier({ audience: "passport", trusted: { gateway: [keys.publicKey] } });
    let ran = 0;
    const server = await startGrpcServer("127.0.0.1:0", log, (s) => {
      addService(
        s,
        passportV1.PassportService,
        {
          ...unimplemented,
          createPassport: () => {
            ran++;
            return {};
          },
        },
        log,
        verifier,
      );
      return [passportV1.PassportService.typeName];
    });
    const client = createClient(passportV1.PassportService, `127.0.0.1:${server.port}`, {
      signer: createContextSigner({ issuer: "gateway", privateKey: keys.privateKey }),
      audience: "passport",
    });
    try {
      await expect(
        client.createPassport({ category: "x", dataJson: "" }, { context: context(newKey(), "x") }),
      ).rejects.toMatchObject({ code: "configuration_error" });
    } finally {
      client.close();
      await server.shutdown(1000);
    }
    expect(ran).toBe(0);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 50,
        service: "dpp.passport.v1.PassportService",
        method: "CreatePassport",
        msg: expect.stringContaining("does not declare idempotency"),
      }),
    );
  });
});

// --- the checks of the contract -------------------------------------------------------------------------------

describe("with the keyed-call checks on", () => {
  it.each(["null", "copy", "single-null", "caught"])(
    "fails a keyed call whose work opens a store transaction outside the call's (%s), and records nothing",
    async (how) => {
      const h = handles.checked!;
      const key = newKey();
      for (let i = 0; i < 2; i++) {
        const refused = await send(h, how, key);
        expect(refused).toMatchObject({
          code: "configuration_error",
          details: { reason: "keyed_call_contract", rule: "write_outside_keyed_transaction" },
        });
      }
      expect(await itemsOf(h, key)).toEqual([]);
      expect(await recordsOf(h, key)).toBe(0);
    },
  );

  it("leaves a keyed call alone whose writes join its transaction, and a call without a key that writes on its own", async () => {
    const h = handles.checked!;
    const key = newKey();
    expect(await send(h, "own", key)).toEqual({ id: "pp_own" });
    expect(await itemsOf(h, key)).toEqual(["own"]);
    const ctx = context();
    const client = h.client(passportV1.PassportService);
    try {
      await client.createPassport({ category: "null", dataJson: "" }, { context: ctx });
    } finally {
      client.close();
    }
    expect(await itemsOf(h, ctx.requestId)).toEqual(["null"]);
  });

  it.each(["call-first", "call-caught"])(
    "fails a keyed call under openWithWork that calls another service before its first statement (%s)",
    async (how) => {
      const h = handles.withWork!;
      const key = newKey();
      const before = otherCalls;
      const refused = await send(h, how, key);
      expect(refused).toMatchObject({
        code: "configuration_error",
        details: { reason: "keyed_call_contract", rule: "client_call_before_claim" },
      });
      expect(otherCalls).toBe(before);
      expect(await itemsOf(h, key)).toEqual([]);
      expect(await recordsOf(h, key)).toBe(0);
    },
  );

  it.each(["write-first", "call-in-once"])(
    "leaves a keyed call under openWithWork alone that calls another service once its key is claimed (%s)",
    async (how) => {
      const h = handles.withWork!;
      const key = newKey();
      const before = otherCalls;
      expect(await send(h, how, key)).toEqual({ id: `pp_${how}` });
      expect(otherCalls).toBe(before + 1);
      expect(await itemsOf(h, key)).toEqual([how]);
      expect(await recordsOf(h, key)).toBe(1);
    },
  );

  it("leaves a call that opens its key before the work alone when it calls another service first", async () => {
    const h = handles.checked!;
    const key = newKey();
    expect(await send(h, "call-first", key)).toEqual({ id: "pp_call-first" });
    expect(await itemsOf(h, key)).toEqual(["call-first"]);
  });
});
