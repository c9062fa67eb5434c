/**
 * The gRPC adapter and server helpers over a real loopback connection, using the
 * generated PassportService with a tiny fake implementation.
 */
import net from "node:net";
import * as grpc from "@grpc/grpc-js";
import { create } from "@bufbuild/protobuf";
import { healthV1, passportV1 } from "@dpp/proto";
import { ApiError } from "@dpp/contract";
import {
  addService,
  createClient,
  fromServiceError,
  serviceDefinition,
  WORK_DEADLINE_METADATA_KEY,
  type ClientOf,
  type ImplOf,
} from "../../src/grpc";
import type { CallContext } from "../../src/context";
import { startGrpcServer, type GrpcServerHandle } from "../../src/server";
import { createLogger } from "../../src/logger";
import type { RequestContext } from "../../src/context";
import {
  CONTEXT_METADATA_KEY,
  REQUEST_ID_METADATA_KEY,
  createContextSigner,
  createContextVerifier,
  generateInternalKeyPair,
} from "../../src/internal-auth";
import { eventually } from "../../src/testing";
import { DEADLINE_GRACE_MS } from "../../src/deadline";

const log = createLogger("kit-grpc-test", "silent");
// The calls of these tests are the gateway's, signed with a key pair made for the test.
const keys = generateInternalKeyPair();
const signer = createContextSigner({ issuer: "gateway", privateKey: keys.privateKey });
const verifier = createContextVerifier({ audience: "passport", trusted: { gateway: [keys.publicKey] } });
const clientOptions = { signer, audience: "passport" };
const SERVICE = passportV1.PassportService.typeName;
const { HealthCheckResponse_ServingStatus: Serving } = healthV1;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Handlers the tests swap in; the fake answers GetPassport through `onGet`. */
let onGet: (
  id: string,
  call: CallContext,
) => Promise<passportV1.GetPassportResponse | object> = async () => ({});

// Methods the tests do not call answer resource_not_found (the service grows; the fake need not).
const unimplemented = Object.fromEntries(
  passportV1.PassportService.methods.map((m) => [
    m.localName,
    () => {
      throw new ApiError("resource_not_found");
    },
  ]),
) as unknown as ImplOf<typeof passportV1.PassportService>;

const fake: ImplOf<typeof passportV1.PassportService> = {
  ...unimplemented,
  listCategories: () => ({ categories: [{ id: "apparel", displayName: "Apparel", regulations: ["ESPR"] }] }),
  getCategorySchema: () => {
    throw new ApiError("resource_not_found");
  },
  createPassport: () => {
    throw new ApiError("resource_not_found");
  },
  getPassport: (req, call) => onGet(req.id, call) as never,
  listPassports: () => ({ passports: [], hasMore: false, nextCursor: "" }),
};

async function startFake(): Promise<GrpcServerHandle> {
  return startGrpcServer("127.0.0.1:0", log, (server) => {
    addService(server, passportV1.PassportService, fake, log, verifier);
    return [SERVICE];
  });
}

const HealthClient = grpc.makeGenericClientConstructor(serviceDefinition(healthV1.Health), "Health");
type RawHealth = grpc.Client & {
  check(
    req: object,
    md: grpc.Metadata,
    opts: grpc.CallOptions,
    cb: (e: grpc.ServiceError | null, r?: healthV1.HealthCheckResponse) => void,
  ): void;
  watch(req: object): grpc.ClientReadableStream<healthV1.HealthCheckResponse>;
};
const healthClient = (port: number) =>
  new HealthClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as RawHealth;

function check(client: RawHealth, service: string): Promise<{ status?: number; code?: grpc.status }> {
  return new Promise((resolve) =>
    client.check(
      create(healthV1.HealthCheckRequestSchema, { service }),
      new grpc.Metadata(),
      { deadline: Date.now() + 3000 },
      (e, r) => resolve(e ? { code: e.code } : { status: r!.status }),
    ),
  );
}

async function rejection(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return err as ApiError;
  }
  throw new Error("expected the call to fail");
}

/** A loopback port where nothing listens. */
async function deadPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

const context: RequestContext = {
  requestId: "req_grpc_test",
  organizationId: "org_acme",
  livemode: false,
  keyId: "key_123",
  credentialKind: "secret",
  plan: { planId: "plan_growth", subscriptionStatus: "active" },
};

describe("gRPC server and client", () => {
  let handle: GrpcServerHandle;
  let passport: ClientOf<typeof passportV1.PassportService>;

  beforeAll(async () => {
    handle = await startFake();
    passport = createClient(passportV1.PassportService, `127.0.0.1:${handle.port}`, clientOptions);
  });

  afterAll(async () => {
    passport.close();
    handle.server.forceShutdown();
  });

  afterEach(() => {
    onGet = async () => ({});
  });

  it("answers a unary call with the handler's message", async () => {
    onGet = async (id) => ({
      passport: {
        id,
        organizationId: "org_acme",
        category: "apparel",
        status: passportV1.PassportStatus.DRAFT,
        version: 3,
        dataJson: "{}",
      },
    });
    const res = await passport.getPassport({ id: "pp_1" }, { context });
    expect(res.passport?.id).toBe("pp_1");
    expect(res.passport?.version).toBe(3);
    expect(res.passport?.gtin).toBeUndefined();
    const cats = await passport.listCategories({}, { context });
    expect(cats.categories.map((c) => [c.id, c.displayName, c.regulations])).toEqual([
      ["apparel", "Apparel", ["ESPR"]],
    ]);
  });

  it("delivers the request context and a deadline to the handler", async () => {
    let seen: CallContext | undefined;
    let cancelledInHandler: boolean | undefined;
    onGet = async (_id, call) => {
      seen = call;
      cancelledInHandler = call.cancelled();
      return {};
    };
    const before = Date.now();
    await passport.getPassport({ id: "pp_ctx" }, { context, deadlineMs: 2000 });
    expect(seen?.ctx).toEqual(context);
    expect(seen?.caller).toBe("gateway");
    expect(cancelledInHandler).toBe(false);
    // The work deadline: the caller's 2 s, the grace it waits past them taken off again.
    const deadline = seen!.deadline;
    expect(deadline).toBeGreaterThan(before + 1000);
    expect(deadline).toBeLessThanOrEqual(Date.now() + 2000 + 50);
  });

  it("delivers a public context (no tenant) as just a request id", async () => {
    let seen: RequestContext | undefined;
    onGet = async (_id, call) => {
      seen = call.ctx;
      return {};
    };
    await passport.getPassport({ id: "x" }, { context: { requestId: "req_public" } });
    expect(seen).toEqual({ requestId: "req_public" });
  });

  it("gives the client the ApiError the handler threw: code, message, details, headers", async () => {
    onGet = async () => {
      throw new ApiError(
        "rate_limited",
        "Slow down, please.",
        { limit: 60, window: "1m", nested: { a: [1, null] } },
        { "Retry-After": "17" },
      );
    };
    const err = await rejection(passport.getPassport({ id: "pp_x" }, { context }));
    expect(err.code).toBe("rate_limited");
    expect(err.status).toBe(429);
    expect(err.message).toBe("Slow down, please.");
    expect(err.details).toEqual({ limit: 60, window: "1m", nested: { a: [1, null] } });
    expect(err.headers).toEqual({ "Retry-After": "17" });
  });

  it("passes a synchronous throw and validation issues through as well", async () => {
    const issues = [{ source: { pointer: "/data/weight" }, rule: "type" }];
    const err1 = await rejection(passport.createPassport({ category: "textile" }, { context }));
    expect(err1.code).toBe("resource_not_found");
    onGet = async () => {
      throw new ApiError("validation_failed", undefined, { issues });
    };
    const err2 = await rejection(passport.getPassport({ id: "pp_v" }, { context }));
    expect(err2.code).toBe("validation_failed");
    expect(err2.details).toEqual({ issues });
    expect(err2.headers).toEqual({});
  });

  describe("a refusal larger than a trailer can carry (docs/decisions/0046)", () => {
    /** Details whose JSON is about `bytes` long: rows of 100 bytes, nothing boundError cuts. */
    const rows = (bytes: number) =>
      Array.from({ length: Math.ceil(bytes / 100) }, (_, i) => ({ row: i, reason: "r".repeat(80) }));
    const answer = (id: string) => ({
      passport: {
        id,
        organizationId: "org_acme",
        category: "apparel",
        status: passportV1.PassportStatus.DRAFT,
        version: 1,
        dataJson: "{}",
      },
    });
    beforeEach(() => {
      onGet = async (id) => {
        const [kind, size] = id.split(":");
        if (kind === "slow") {
          await sleep(Number(size));
          return answer(id);
        }
        throw new ApiError("invalid_request", "Too many rows.", { rows: rows(Number(size)) });
      };
    });

    // 40 KB travelled before, 100 KB is over the 64 KiB a header field may have, 300 KB over the 8
    // CONTINUATION frames a header block may take, 2 MiB over the largest answer a service gives.
    it.each([40_000, 100_000, 300_000, 2 * 1024 * 1024])(
      "carries a refusal of %i bytes of details whole, at once",
      async (bytes) => {
        const started = Date.now();
        // At once: well inside the 10 s deadline a stalled stream would wait out (bounded loosely, the
        // machine may be busy; how fast it is is the bench's to measure).
        const err = await rejection(
          passport.getPassport({ id: `fail:${bytes}` }, { context, deadlineMs: 10_000 }),
        );
        expect(Date.now() - started).toBeLessThan(3000);
        expect(err.code).toBe("invalid_request");
        expect(err.message).toBe("Too many rows.");
        expect(err.details).toEqual({ rows: rows(bytes) });
        expect(JSON.stringify(err.details).length).toBeGreaterThanOrEqual(bytes);
      },
    );

    it("fails and delays no other call on the same channel, and leaves the channel working", async () => {
      const started = Date.now();
      const slow = passport.getPassport({ id: "slow:150" }, { context, deadlineMs: 10_000 }).then((r) => ({
        id: r.passport?.id,
        ms: Date.now() - started,
      }));
      const refused = [100_000, 300_000, 2 * 1024 * 1024].map((bytes) =>
        rejection(passport.getPassport({ id: `fail:${bytes}` }, { context, deadlineMs: 10_000 })),
      );
      const quick = passport.getPassport({ id: "slow:0" }, { context, deadlineMs: 10_000 }).then((r) => ({
        id: r.passport?.id,
        ms: Date.now() - started,
      }));
      expect((await Promise.all(refused)).map((e) => [e.code, (e.details.rows as unknown[]).length])).toEqual(
        [
          ["invalid_request", 1000],
          ["invalid_request", 3000],
          ["invalid_request", 20972],
        ],
      );
      const [s, q] = await Promise.all([slow, quick]);
      expect([s.id, q.id]).toEqual(["slow:150", "slow:0"]);
      // Neither waited for a 10 s deadline behind the refusals.
      expect(s.ms).toBeLessThan(3000);
      expect(q.ms).toBeLessThan(3000);
      const after = Date.now();
      const next = await passport.getPassport({ id: "slow:0" }, { context, deadlineMs: 10_000 });
      expect(next.passport?.id).toBe("slow:0");
      expect(Date.now() - after).toBeLessThan(3000);
    });
  });

  it("turns a plain Error into internal_error without leaking its message", async () => {
    onGet = async () => {
      throw new Error("connection to db-primary.internal failed: password authentication for user svc");
    };
    const err = await rejection(passport.getPassport({ id: "pp_boom" }, { context }));
    expect(err.code).toBe("internal_error");
    expect(err.status).toBe(500);
    const visible = JSON.stringify({ m: err.message, d: err.details, h: err.headers });
    expect(visible).not.toContain("db-primary");
    expect(visible).not.toContain("password");
  });

  it("fails fast with upstream_unavailable where nothing listens", async () => {
    const port = await deadPort();
    const nowhere = createClient(passportV1.PassportService, `127.0.0.1:${port}`, clientOptions);
    try {
      const started = Date.now();
      const err = await rejection(nowhere.getPassport({ id: "pp_1" }, { context, deadlineMs: 10_000 }));
      expect(Date.now() - started).toBeLessThan(3000);
      expect(err.code).toBe("internal_error");
      expect(err.details).toEqual({ reason: "upstream_unavailable", service: "passport" });
      expect(err.headers["Retry-After"]).toBeDefined();
    } finally {
      nowhere.close();
    }
  });

  it("gives outcome_unknown once the deadline and its grace have passed without an answer, and the handler sees cancellation", async () => {
    let cancelledSeen = false;
    let finished = false;
    onGet = async (_id, call) => {
      const until = Date.now() + 8000;
      while (Date.now() < until && !call.cancelled()) await sleep(10);
      cancelledSeen = call.cancelled();
      finished = true;
      return {};
    };
    const started = Date.now();
    const err = await rejection(passport.getPassport({ id: "pp_slow" }, { context, deadlineMs: 300 }));
    const took = Date.now() - started;
    // The handler ignored its deadline: the caller cannot know what it did.
    expect(err.code).toBe("internal_error");
    expect(err.details).toEqual({ reason: "outcome_unknown", service: "passport" });
    expect(err.message).toMatch(/SAME Idempotency-Key/);
    expect(took).toBeGreaterThanOrEqual(300 + DEADLINE_GRACE_MS - 50);
    // Not the 8 s the handler would take.
    expect(took).toBeLessThan(300 + DEADLINE_GRACE_MS + 2500);
    await eventually(async () => (finished ? true : undefined), 4000);
    expect(cancelledSeen).toBe(true);
  });

  it("does not start a call whose named work deadline has passed, however long its gRPC deadline", async () => {
    // A call that waited in the socket of a stalled process: gRPC's relative deadline starts again on reading.
    let ran = false;
    onGet = async () => {
      ran = true;
      return {};
    };
    const Raw = grpc.makeGenericClientConstructor(serviceDefinition(passportV1.PassportService), "Raw");
    const raw = new Raw(`127.0.0.1:${handle.port}`, grpc.credentials.createInsecure()) as unknown as {
      getPassport(
        req: object,
        md: grpc.Metadata,
        opts: grpc.CallOptions,
        cb: (e: grpc.ServiceError | null) => void,
      ): void;
      close(): void;
    };
    const method = `/${SERVICE}/GetPassport`;
    const md = new grpc.Metadata();
    md.set(
      CONTEXT_METADATA_KEY,
      signer.sign(context, { audience: "passport", method, deadline: Date.now() + 10_000 }),
    );
    md.set(REQUEST_ID_METADATA_KEY, context.requestId);
    md.set(WORK_DEADLINE_METADATA_KEY, String(Date.now() - 1));
    try {
      const err = await new Promise<grpc.ServiceError | null>((resolve) =>
        raw.getPassport(
          create(passportV1.GetPassportRequestSchema, { id: "pp_stalled" }),
          md,
          { deadline: Date.now() + 10_000 },
          resolve,
        ),
      );
      expect(err?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
      expect(fromServiceError(err!, "passport").details).toEqual({
        reason: "upstream_timeout",
        service: "passport",
      });
      expect(ran).toBe(false);
    } finally {
      raw.close();
    }
  });

  it("uses the client's default deadline when the call names none", async () => {
    const quick = createClient(passportV1.PassportService, `127.0.0.1:${handle.port}`, {
      ...clientOptions,
      deadlineMs: 200,
    });
    onGet = async (_id, call) => {
      const until = Date.now() + 8000;
      while (Date.now() < until && !call.cancelled()) await sleep(10);
      return {};
    };
    try {
      const started = Date.now();
      const err = await rejection(quick.getPassport({ id: "pp_d" }, { context }));
      expect(err.details.reason).toBe("outcome_unknown");
      // The 200 ms default and its grace, not the 8 s the handler would take.
      expect(Date.now() - started).toBeLessThan(200 + DEADLINE_GRACE_MS + 2500);
    } finally {
      quick.close();
    }
  });

  describe("grpc.health.v1", () => {
    let health: RawHealth;
    beforeAll(() => {
      health = healthClient(handle.port);
    });
    afterAll(() => health.close());

    it("answers SERVING for the server and the registered service", async () => {
      expect(await check(health, "")).toEqual({ status: Serving.SERVING });
      expect(await check(health, SERVICE)).toEqual({ status: Serving.SERVING });
    });

    it("answers NOT_FOUND for an unknown service", async () => {
      expect(await check(health, "dpp.nothing.v1.NoService")).toEqual({ code: grpc.status.NOT_FOUND });
    });
  });
});

describe("graceful shutdown", () => {
  it("reports NOT_SERVING, refuses new calls, and lets an in-flight call finish", async () => {
    const handle = await startFake();
    const passport = createClient(passportV1.PassportService, `127.0.0.1:${handle.port}`, clientOptions);
    const health = healthClient(handle.port);
    try {
      // A watcher sees the status changes as they happen.
      const statuses: number[] = [];
      let watchEnded = false;
      const watch = health.watch(create(healthV1.HealthCheckRequestSchema, { service: SERVICE }));
      watch.on("data", (r: healthV1.HealthCheckResponse) => statuses.push(r.status));
      watch.on("error", () => (watchEnded = true));
      watch.on("end", () => (watchEnded = true));
      await eventually(async () => (statuses.length > 0 ? true : undefined), 3000);
      expect(statuses).toEqual([Serving.SERVING]);

      let entered = false;
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      onGet = async (id) => {
        entered = true;
        await gate;
        return { passport: { id, status: passportV1.PassportStatus.DRAFT } };
      };
      const inFlight = passport.getPassport({ id: "pp_inflight" }, { context, deadlineMs: 10_000 });
      await eventually(async () => (entered ? true : undefined), 3000);

      let shutDown = false;
      const stopping = handle.shutdown(10_000).then(() => (shutDown = true));

      await eventually(async () => (watchEnded ? true : undefined), 3000);
      expect(statuses).toEqual([Serving.SERVING, Serving.NOT_SERVING]);

      // The server does not finish while the call is still running.
      await sleep(200);
      expect(shutDown).toBe(false);

      release();
      const res = await inFlight;
      expect(res.passport?.id).toBe("pp_inflight");
      await stopping;
      expect(shutDown).toBe(true);

      // Once stopped, new calls fail as unavailable.
      const err = await rejection(passport.getPassport({ id: "pp_after" }, { context, deadlineMs: 3000 }));
      expect(err.details.reason).toBe("upstream_unavailable");
    } finally {
      onGet = async () => ({});
      passport.close();
      health.close();
      handle.server.forceShutdown();
    }
  });

  it("forces the shutdown once the grace period is over", async () => {
    const handle = await startFake();
    const passport = createClient(passportV1.PassportService, `127.0.0.1:${handle.port}`, clientOptions);
    let entered = false;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    onGet = async () => {
      entered = true;
      await gate;
      return {};
    };
    try {
      const stuck = passport.getPassport({ id: "pp_stuck" }, { context, deadlineMs: 10_000 }).catch((e) => e);
      await eventually(async () => (entered ? true : undefined), 3000);
      const started = Date.now();
      await handle.shutdown(300);
      expect(Date.now() - started).toBeLessThan(2000);
      const outcome = await stuck;
      expect(outcome).toBeInstanceOf(ApiError);
    } finally {
      release();
      onGet = async () => ({});
      passport.close();
    }
  });
});
