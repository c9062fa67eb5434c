/**
 * The trust check over a real loopback connection: a gRPC service answers only
 * calls whose context is signed by a caller it trusts. Everything else is
 * UNAUTHENTICATED and its handler never runs.
 */
import { Writable } from "node:stream";
import * as grpc from "@grpc/grpc-js";
import { passportV1, healthV1 } from "@dpp/proto";
import pino from "pino";
import { ApiError } from "@dpp/contract";
import {
  addService,
  createClient,
  createHealthClient,
  fromServiceError,
  serviceDefinition,
  type ImplOf,
} from "../../src/grpc";
import { startGrpcServer, type GrpcServerHandle } from "../../src/server";
import type { CallContext, RequestContext } from "../../src/context";
import { createDb } from "../../src/db";
import { migrateIdempotency } from "../../src/idempotency";
import { createTestDatabase, type TestDatabase } from "../../src/testing";
import {
  CONTEXT_METADATA_KEY,
  createContextSigner,
  createContextVerifier,
  generateInternalKeyPair,
  IDEMPOTENCY_FINGERPRINT_METADATA_KEY,
  IDEMPOTENCY_KEY_METADATA_KEY,
  REQUEST_ID_METADATA_KEY,
  type ContextVerifier,
} from "../../src/internal-auth";

const SERVICE = passportV1.PassportService.typeName;
const GET = `/${SERVICE}/GetPassport`;
const CREATE = `/${SERVICE}/CreatePassport`;

const gatewayKeys = generateInternalKeyPair();
const adminKeys = generateInternalKeyPair();
const attackerKeys = generateInternalKeyPair();
const gateway = createContextSigner({ issuer: "gateway", privateKey: gatewayKeys.privateKey });
const admin = createContextSigner({ issuer: "admin", privateKey: adminKeys.privateKey });

const orgA: RequestContext = {
  requestId: "req_a",
  organizationId: "org_a",
  livemode: false,
  keyId: "key_a",
  credentialKind: "secret",
  plan: {
    planId: "trial",
    subscriptionStatus: "trialing",
    publishLimit: 3,
    unitLimit: 100,
    documentLimit: 20,
  },
};

/** Every handler run, with what it was given. */
const runs: Array<{ rpc: string; ctx: RequestContext; caller: string }> = [];
const record = (rpc: string, call: CallContext) => runs.push({ rpc, ctx: call.ctx, caller: call.caller });

const notHere = Object.fromEntries(
  passportV1.PassportService.methods.map((m) => [
    m.localName,
    (_req: unknown, call: CallContext) => {
      record(m.name, call);
      throw new ApiError("resource_not_found");
    },
  ]),
) as unknown as ImplOf<typeof passportV1.PassportService>;

const impl: ImplOf<typeof passportV1.PassportService> = {
  ...notHere,
  listPassports: (_req, call) => {
    record("ListPassports", call);
    call.log.info("listed");
    return { passports: [], hasMore: false, nextCursor: "" };
  },
  getPassport: (req, call) => {
    record("GetPassport", call);
    return {
      passport: {
        id: req.id,
        organizationId: call.ctx.organizationId ?? "",
        status: passportV1.PassportStatus.DRAFT,
      },
    };
  },
  createPassport: (_req, call) => {
    record("CreatePassport", call);
    return {
      passport: {
        id: "pp_new",
        organizationId: call.ctx.organizationId ?? "",
        status: passportV1.PassportStatus.DRAFT,
      },
    };
  },
};

const serverLog: Array<Record<string, unknown>> = [];
const log = pino(
  { level: "info" },
  new Writable({
    write(chunk, _enc, done) {
      serverLog.push(JSON.parse(String(chunk)));
      done();
    },
  }),
);

type RawCall = (
  req: object,
  md: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: (e: grpc.ServiceError | null, r?: passportV1.GetPassportResponse) => void,
) => void;
type RawPassport = grpc.Client & { getPassport: RawCall; createPassport: RawCall };
const RawClient = grpc.makeGenericClientConstructor(
  serviceDefinition(passportV1.PassportService),
  "Passport",
);

/** A call as anyone on the network can make it: any metadata, no kit client. */
function rawCall(
  client: RawPassport,
  method: "getPassport" | "createPassport",
  md: grpc.Metadata,
): Promise<{ ok: true } | { ok: false; err: grpc.ServiceError }> {
  const req = method === "getPassport" ? { id: "pp_of_b" } : { category: "apparel" };
  return new Promise((resolve) =>
    client[method](req, md, { deadline: Date.now() + 3000 }, (e) =>
      resolve(e ? { ok: false, err: e } : { ok: true }),
    ),
  );
}

const metadata = (entries: Array<[string, string]>) => {
  const md = new grpc.Metadata();
  for (const [k, v] of entries) md.add(k, v);
  return md;
};

/** The token of every call the service checked, in order. */
const tokensSeen: Array<string | undefined> = [];
const recording = (v: ContextVerifier): ContextVerifier => ({
  audience: v.audience,
  callers: v.callers,
  get cached() {
    return v.cached;
  },
  verify: (token, method, requestId, idempotency) => {
    tokensSeen.push(token);
    return v.verify(token, method, requestId, idempotency);
  },
});

/** The claims of a token edited in place, keeping its signature. */
function edit(token: string, change: (claims: any) => void): string {
  const [payload, signature] = token.split(".");
  const claims = JSON.parse(Buffer.from(payload!, "base64url").toString());
  change(claims);
  return `${Buffer.from(JSON.stringify(claims)).toString("base64url")}.${signature}`;
}

describe("the trust check of a gRPC service", () => {
  let handle: GrpcServerHandle;
  let raw: RawPassport;
  // The service honours Idempotency-Keys (a keyed call to one that does not is refused before its handler).
  let tdb: TestDatabase;
  let db: ReturnType<typeof createDb>;
  const address = () => `127.0.0.1:${handle.port}`;

  beforeAll(async () => {
    tdb = await createTestDatabase("kit_auth");
    await migrateIdempotency(tdb.url, "auth");
    db = createDb({ url: tdb.url, schema: "auth", applicationName: "kit-auth-test", max: 2 });
    const verifier = recording(
      createContextVerifier({
        audience: "passport",
        trusted: { gateway: [gatewayKeys.publicKey], admin: [adminKeys.publicKey] },
      }),
    );
    handle = await startGrpcServer("127.0.0.1:0", log, (server) => {
      addService(server, passportV1.PassportService, impl, log, verifier, { idempotency: { db } });
      return [SERVICE];
    });
    raw = new RawClient(address(), grpc.credentials.createInsecure()) as unknown as RawPassport;
  });

  afterAll(async () => {
    raw.close();
    handle.server.forceShutdown();
    await db?.destroy();
    await tdb?.drop();
  });

  beforeEach(() => {
    runs.length = 0;
    serverLog.length = 0;
    tokensSeen.length = 0;
  });

  /** Asserts the call was refused as UNAUTHENTICATED with the kit's packed error and touched nothing. */
  async function expectRefused(
    method: "getPassport" | "createPassport",
    md: grpc.Metadata,
    check: string,
  ): Promise<void> {
    serverLog.length = 0;
    const res = await rawCall(raw, method, md);
    expect(res.ok).toBe(false);
    const err = (res as { err: grpc.ServiceError }).err;
    expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
    // What the caller can read of the packed error (as a caller that does not translate it would).
    const packed = fromServiceError({ ...err, code: grpc.status.INTERNAL }, "passport");
    expect(packed.code).toBe("configuration_error");
    expect(packed.details).toEqual({ reason: "caller_not_authenticated", check });
    expect(runs).toEqual([]);
    expect(serverLog).toEqual([expect.objectContaining({ level: 40, check })]);
  }

  it("refuses a call without a token", async () => {
    await expectRefused("getPassport", new grpc.Metadata(), "missing");
    await expectRefused("createPassport", new grpc.Metadata(), "missing");
  });

  it("refuses a call that writes the context as plain x-dpp-* headers", async () => {
    const headers: Array<[string, string]> = [
      ["x-request-id", "req_forged"],
      ["x-dpp-organization-id", "org_b"],
      ["x-dpp-livemode", "true"],
      ["x-dpp-key-id", "key_b"],
      ["x-dpp-credential-kind", "secret"],
      ["x-dpp-plan-id", "scale"],
      ["x-dpp-subscription-status", "active"],
      ["x-dpp-publish-limit", "100000"],
    ];
    await expectRefused("getPassport", metadata(headers), "missing");
    await expectRefused("createPassport", metadata(headers), "missing");
  });

  it("refuses a token signed with a key the service does not trust", async () => {
    const asGateway = createContextSigner({ issuer: "gateway", privateKey: attackerKeys.privateKey });
    const forged = asGateway.sign(
      { ...orgA, organizationId: "org_b" },
      { audience: "passport", method: GET, deadline: Date.now() + 5000 },
    );
    await expectRefused("getPassport", metadata([[CONTEXT_METADATA_KEY, forged]]), "bad_signature");

    const asStranger = createContextSigner({ issuer: "portal", privateKey: attackerKeys.privateKey });
    const stranger = asStranger.sign(orgA, {
      audience: "passport",
      method: GET,
      deadline: Date.now() + 5000,
    });
    await expectRefused("getPassport", metadata([[CONTEXT_METADATA_KEY, stranger]]), "untrusted_issuer");
  });

  it("refuses a token signed for organization A whose claims were edited to organization B", async () => {
    const deadline = Date.now() + 5000;
    const forRead = gateway.sign(orgA, { audience: "passport", method: GET, deadline });
    const forCreate = gateway.sign(orgA, { audience: "passport", method: CREATE, deadline });
    const toB = (c: any) => {
      c.ctx.organization_id = "org_b";
      c.ctx.livemode = true;
    };
    await expectRefused(
      "getPassport",
      metadata([[CONTEXT_METADATA_KEY, edit(forRead, toB)]]),
      "bad_signature",
    );
    await expectRefused(
      "createPassport",
      metadata([[CONTEXT_METADATA_KEY, edit(forCreate, toB)]]),
      "bad_signature",
    );
  });

  it("refuses a valid token used for another method or sent to another service", async () => {
    const deadline = Date.now() + 5000;
    const readToken = gateway.sign(orgA, { audience: "passport", method: GET, deadline });
    await expectRefused("createPassport", metadata([[CONTEXT_METADATA_KEY, readToken]]), "wrong_method");
    const forEvents = gateway.sign(orgA, { audience: "events", method: GET, deadline });
    await expectRefused("getPassport", metadata([[CONTEXT_METADATA_KEY, forEvents]]), "wrong_audience");
  });

  it("refuses a call carrying a second, forged token beside a valid one, in either order", async () => {
    const deadline = Date.now() + 5000;
    const valid = gateway.sign(orgA, { audience: "passport", method: GET, deadline });
    const forged = edit(valid, (c) => (c.ctx.organization_id = "org_b"));
    for (const tokens of [
      [valid, forged],
      [forged, valid],
    ]) {
      const md = metadata([
        ...tokens.map((t): [string, string] => [CONTEXT_METADATA_KEY, t]),
        [REQUEST_ID_METADATA_KEY, "req_two_tokens"],
      ]);
      await expectRefused("getPassport", md, "malformed");
    }
    // The valid token alone, with the same request id, is answered.
    const alone = metadata([
      [CONTEXT_METADATA_KEY, valid],
      [REQUEST_ID_METADATA_KEY, "req_two_tokens"],
    ]);
    expect((await rawCall(raw, "getPassport", alone)).ok).toBe(true);
  });

  it("refuses a call carrying the same valid token twice", async () => {
    const valid = gateway.sign(orgA, { audience: "passport", method: GET, deadline: Date.now() + 5000 });
    const md = metadata([
      [CONTEXT_METADATA_KEY, valid],
      [CONTEXT_METADATA_KEY, valid],
      [REQUEST_ID_METADATA_KEY, "req_twice"],
    ]);
    await expectRefused("getPassport", md, "malformed");
  });

  it("refuses a token naming one trusted caller signed with another trusted caller's key", async () => {
    const adminAsGateway = createContextSigner({ issuer: "gateway", privateKey: adminKeys.privateKey });
    const token = adminAsGateway.sign(orgA, {
      audience: "passport",
      method: GET,
      deadline: Date.now() + 5000,
    });
    const md = metadata([
      [CONTEXT_METADATA_KEY, token],
      [REQUEST_ID_METADATA_KEY, "req_other_key"],
    ]);
    await expectRefused("getPassport", md, "bad_signature");
  });

  it("runs the handler with exactly the signed context and the verified caller", async () => {
    const passport = createClient(passportV1.PassportService, address(), {
      signer: gateway,
      audience: "passport",
    });
    const asAdmin = createClient(passportV1.PassportService, address(), {
      signer: admin,
      audience: "passport",
    });
    try {
      const res = await passport.getPassport({ id: "pp_1" }, { context: orgA });
      expect(res.passport?.organizationId).toBe("org_a");
      await asAdmin.createPassport(
        { category: "textile" },
        { context: { requestId: "req_admin", organizationId: "org_a", livemode: true } },
      );
      expect(runs).toEqual([
        { rpc: "GetPassport", ctx: orgA, caller: "gateway" },
        {
          rpc: "CreatePassport",
          ctx: { requestId: "req_admin", organizationId: "org_a", livemode: true },
          caller: "admin",
        },
      ]);
    } finally {
      passport.close();
      asAdmin.close();
    }
  });

  it("gives a kit client whose key the service does not trust internal_error upstream_rejected_caller, and logs why", async () => {
    const callerLines: Array<Record<string, unknown>> = [];
    const callerLog = pino(
      { level: "info" },
      new Writable({
        write(chunk, _enc, done) {
          callerLines.push(JSON.parse(String(chunk)));
          done();
        },
      }),
    );
    const misconfigured = createClient(passportV1.PassportService, address(), {
      signer: createContextSigner({ issuer: "gateway", privateKey: attackerKeys.privateKey }),
      audience: "passport",
      log: callerLog,
    });
    try {
      const err = await misconfigured.getPassport({ id: "pp_1" }, { context: orgA }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe("internal_error");
      expect((err as ApiError).details).toEqual({ reason: "upstream_rejected_caller", service: "passport" });
      expect(callerLines).toEqual([
        expect.objectContaining({ level: 50, service: "passport", check: "bad_signature" }),
      ]);
      expect(runs).toEqual([]);
    } finally {
      misconfigured.close();
    }
  });

  it("sends one token for many calls and gives each handler its call's own request id", async () => {
    const passport = createClient(passportV1.PassportService, address(), {
      signer: gateway,
      audience: "passport",
    });
    try {
      await passport.getPassport({ id: "pp_1" }, { context: { ...orgA, requestId: "req_one" } });
      await passport.getPassport({ id: "pp_2" }, { context: { ...orgA, requestId: "req_two" } });
      await passport.listPassports({}, { context: { ...orgA, requestId: "req_three" } });
      expect(runs).toEqual([
        { rpc: "GetPassport", ctx: { ...orgA, requestId: "req_one" }, caller: "gateway" },
        { rpc: "GetPassport", ctx: { ...orgA, requestId: "req_two" }, caller: "gateway" },
        { rpc: "ListPassports", ctx: { ...orgA, requestId: "req_three" }, caller: "gateway" },
      ]);
      expect(runs[0]!.ctx).not.toBe(runs[1]!.ctx);
      // The same token for the same method; another method has its own.
      expect(tokensSeen[1]).toBe(tokensSeen[0]);
      expect(tokensSeen[2]).not.toBe(tokensSeen[0]);
      // The handler's logger names the call's request id, method and caller.
      expect(serverLog).toEqual([
        expect.objectContaining({
          msg: "listed",
          request_id: "req_three",
          rpc: "ListPassports",
          caller: "gateway",
        }),
      ]);
    } finally {
      passport.close();
    }
  });

  it("refuses a genuine token whose call carries no request id, or one too long, as malformed", async () => {
    const valid = gateway.sign(orgA, { audience: "passport", method: GET, deadline: Date.now() + 5000 });
    await expectRefused("getPassport", metadata([[CONTEXT_METADATA_KEY, valid]]), "malformed");
    await expectRefused(
      "getPassport",
      metadata([
        [CONTEXT_METADATA_KEY, valid],
        [REQUEST_ID_METADATA_KEY, "r".repeat(201)],
      ]),
      "malformed",
    );
    const res = await rawCall(
      raw,
      "getPassport",
      metadata([
        [CONTEXT_METADATA_KEY, valid],
        [REQUEST_ID_METADATA_KEY, "req_raw"],
      ]),
    );
    expect(res.ok).toBe(true);
    expect(runs).toEqual([{ rpc: "GetPassport", ctx: { ...orgA, requestId: "req_raw" }, caller: "gateway" }]);
  });

  it("sends one token for keyed writes under different keys and gives each handler its call's own key", async () => {
    const passport = createClient(passportV1.PassportService, address(), {
      signer: gateway,
      audience: "passport",
    });
    const write = (n: number): RequestContext => ({
      ...orgA,
      requestId: `req_w${n}`,
      idempotency: { key: `key-${n}`, fingerprint: String(n).repeat(64), callerOrganizationId: "org_a" },
    });
    try {
      await passport.createPassport({ category: "textile" }, { context: write(1) });
      await passport.createPassport({ category: "textile" }, { context: write(2) });
      expect(runs).toEqual([
        { rpc: "CreatePassport", ctx: write(1), caller: "gateway" },
        { rpc: "CreatePassport", ctx: write(2), caller: "gateway" },
      ]);
      expect(runs[0]!.ctx.idempotency).not.toBe(runs[1]!.ctx.idempotency);
      expect(tokensSeen).toHaveLength(2);
      expect(tokensSeen[1]).toBe(tokensSeen[0]);
      // A write without a key has a token of its own: the keyed one signs that its calls carry a key.
      await passport.createPassport({ category: "textile" }, { context: { ...orgA, requestId: "req_w3" } });
      expect(tokensSeen[2]).not.toBe(tokensSeen[0]);
      expect(runs[2]!.ctx).toEqual({ ...orgA, requestId: "req_w3" });
    } finally {
      passport.close();
    }
  });

  it("refuses a keyed token without a valid key and fingerprint beside it, and a key beside a token without one", async () => {
    const deadline = Date.now() + 5000;
    const keyed = gateway.sign(
      { ...orgA, idempotency: { key: "k", fingerprint: "f".repeat(64), callerOrganizationId: "org_a" } },
      { audience: "passport", method: CREATE, deadline },
    );
    const plain = gateway.sign(orgA, { audience: "passport", method: CREATE, deadline });
    const call = (token: string, beside: Array<[string, string]>) =>
      metadata([[CONTEXT_METADATA_KEY, token], [REQUEST_ID_METADATA_KEY, "req_k"], ...beside]);
    const fp: [string, string] = [IDEMPOTENCY_FINGERPRINT_METADATA_KEY, "f".repeat(64)];
    await expectRefused("createPassport", call(keyed, []), "malformed");
    await expectRefused("createPassport", call(keyed, [fp]), "malformed");
    await expectRefused(
      "createPassport",
      call(keyed, [[IDEMPOTENCY_KEY_METADATA_KEY, "k".repeat(256)], fp]),
      "malformed",
    );
    await expectRefused(
      "createPassport",
      call(keyed, [
        [IDEMPOTENCY_KEY_METADATA_KEY, "k"],
        [IDEMPOTENCY_FINGERPRINT_METADATA_KEY, "not-hex"],
      ]),
      "malformed",
    );
    await expectRefused(
      "createPassport",
      call(plain, [[IDEMPOTENCY_KEY_METADATA_KEY, "k"], fp]),
      "malformed",
    );
    // The refusals name the token's issuer in the service's log.
    expect(serverLog).toEqual([expect.objectContaining({ claimed_issuer: "gateway" })]);
    const ok = await rawCall(
      raw,
      "createPassport",
      call(keyed, [[IDEMPOTENCY_KEY_METADATA_KEY, "k-raw"], fp]),
    );
    expect(ok.ok).toBe(true);
    expect(runs).toEqual([
      {
        rpc: "CreatePassport",
        ctx: {
          ...orgA,
          requestId: "req_k",
          idempotency: { key: "k-raw", fingerprint: "f".repeat(64), callerOrganizationId: "org_a" },
        },
        caller: "gateway",
      },
    ]);
  });

  it("refuses a write whose token signs no key when only the key or only the fingerprint travels beside it", async () => {
    const plain = gateway.sign(orgA, { audience: "passport", method: CREATE, deadline: Date.now() + 5000 });
    for (const beside of [
      [IDEMPOTENCY_KEY_METADATA_KEY, "k-alone"],
      [IDEMPOTENCY_FINGERPRINT_METADATA_KEY, "f".repeat(64)],
    ] as Array<[string, string]>) {
      const md = metadata([[CONTEXT_METADATA_KEY, plain], [REQUEST_ID_METADATA_KEY, "req_half"], beside]);
      await expectRefused("createPassport", md, "malformed");
    }
  });

  it("refuses a read carrying a stray Idempotency-Key beside its token, and answers it without", async () => {
    const read = gateway.sign(orgA, { audience: "passport", method: GET, deadline: Date.now() + 5000 });
    const md = (...beside: Array<[string, string]>) =>
      metadata([[CONTEXT_METADATA_KEY, read], [REQUEST_ID_METADATA_KEY, "req_stray"], ...beside]);
    await expectRefused("getPassport", md([IDEMPOTENCY_KEY_METADATA_KEY, "k-stray"]), "malformed");
    expect((await rawCall(raw, "getPassport", md())).ok).toBe(true);
    expect(runs).toEqual([expect.objectContaining({ rpc: "GetPassport", caller: "gateway" })]);
  });

  it("refuses a token it already accepted when it is presented for another method", async () => {
    const readToken = gateway.sign(orgA, { audience: "passport", method: GET, deadline: Date.now() + 5000 });
    const withId = (token: string): Array<[string, string]> => [
      [CONTEXT_METADATA_KEY, token],
      [REQUEST_ID_METADATA_KEY, "req_replay"],
    ];
    expect((await rawCall(raw, "getPassport", metadata(withId(readToken)))).ok).toBe(true);
    runs.length = 0;
    await expectRefused("createPassport", metadata(withId(readToken)), "wrong_method");
  });

  it("answers the health check without a token", async () => {
    const health = createHealthClient(address());
    try {
      expect(await health.check()).toBe(healthV1.HealthCheckResponse_ServingStatus.SERVING);
      expect(await health.check(SERVICE)).toBe(healthV1.HealthCheckResponse_ServingStatus.SERVING);
      expect(runs).toEqual([]);
    } finally {
      health.close();
    }
  });
});

describe("a token the service accepted before, once it has expired", () => {
  let clock = Date.now();
  let handle: GrpcServerHandle;
  let raw: RawPassport;

  beforeAll(async () => {
    const verifier = createContextVerifier({
      audience: "passport",
      trusted: { gateway: [gatewayKeys.publicKey] },
      now: () => clock,
    });
    handle = await startGrpcServer("127.0.0.1:0", log, (server) => {
      addService(server, passportV1.PassportService, impl, log, verifier);
      return [SERVICE];
    });
    raw = new RawClient(
      `127.0.0.1:${handle.port}`,
      grpc.credentials.createInsecure(),
    ) as unknown as RawPassport;
  });

  afterAll(() => {
    raw.close();
    handle.server.forceShutdown();
  });

  it("is refused as expired, although its signature was checked on an earlier call", async () => {
    clock = Date.now();
    const token = gateway.sign(orgA, { audience: "passport", method: GET, deadline: Date.now() + 5000 });
    const { exp } = JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString()) as { exp: number };
    const md = () =>
      metadata([
        [CONTEXT_METADATA_KEY, token],
        [REQUEST_ID_METADATA_KEY, "req_late"],
      ]);
    runs.length = 0;
    expect((await rawCall(raw, "getPassport", md())).ok).toBe(true);
    expect(runs).toHaveLength(1);

    // The service's clock past the token's expiry and the 5 s of skew it allows.
    clock = exp + 5001;
    runs.length = 0;
    serverLog.length = 0;
    const late = await rawCall(raw, "getPassport", md());
    expect(late.ok).toBe(false);
    expect((late as { err: grpc.ServiceError }).err.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(runs).toEqual([]);
    expect(serverLog).toEqual([expect.objectContaining({ level: 40, check: "expired" })]);
  });
});
