/**
 * The metrics every service gets from the kit (docs/metrics.md), read as Prometheus reads them: a service started
 * by the template on a test database, called over gRPC (plain, keyed, replayed, refused, and calling another
 * service), then its /metrics endpoint scraped over HTTP.
 */
import { createHash, randomBytes } from "node:crypto";
import { sql, type Migration } from "kysely";
import { ApiError } from "@dpp/contract";
import { eventsV1, passportV1 } from "@dpp/proto";
import type { RequestContext } from "../../src/context";
import { addService, type ClientOf, type ImplOf } from "../../src/grpc";
import { transaction } from "../../src/idempotency";
import { runKeyedItems } from "../../src/keyed-items";
import { createContextVerifier } from "../../src/internal-auth";
import { createLogger } from "../../src/logger";
import { writeOutbox } from "../../src/outbox";
import { startGrpcServer, type GrpcServerHandle } from "../../src/server";
import { defineService, type ServiceRuntime } from "../../src/service";
import { eventually, startServiceUnderTest, type UnderTest } from "../../src/testing";

const ITEMS: Record<string, Migration> = {
  "0001_items": {
    async up(db) {
      await sql`create table item (id text primary key)`.execute(db);
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

/** The other service the one under test calls (a fake EventsService), and where it listens. */
const other: { server?: GrpcServerHandle; address?: string } = {};
let jobPasses = 0;

const service = defineService({
  name: "metrics-under-test",
  schema: "metrics_under_test",
  migrations: ITEMS,
  env: {},
  grpcPort: 50998,
  idempotency: true,
  outbox: true,
  start: (rt: ServiceRuntime<Record<string, never>, any>) => {
    let events: ClientOf<typeof eventsV1.EventsService> | undefined;
    rt.job({
      name: "metrics-under-test:sweep",
      intervalMs: 60_000,
      run: async () => {
        jobPasses++;
        return 0;
      },
    });
    rt.serve(passportV1.PassportService, {
      ...unimplemented,
      createPassport: async (req, call) => {
        if (req.category === "call-other") {
          events ??= rt.client(eventsV1.EventsService, { address: other.address!, audience: "events" });
          await events.listEvents({}, { context: { requestId: call.ctx.requestId } });
        }
        const id = `pp_${randomBytes(4).toString("hex")}`;
        await transaction(rt.db, call.ctx, async (trx: any) => {
          await trx.insertInto("item").values({ id }).execute();
          await writeOutbox(trx, {
            id: `evt_${randomBytes(6).toString("hex")}`,
            type: "passport.created",
            organization_id: call.ctx.organizationId ?? "org_x",
            livemode: false,
            created_at: new Date().toISOString(),
            data: { object: { id } },
          } as never);
        });
        return { passport: { id } };
      },
    });
  },
});

let h: UnderTest<typeof service>;

beforeAll(async () => {
  // The relay moves nothing for the first minute: the backlog is there to be read.
  h = await startServiceUnderTest(service, { RELAY_INTERVAL_MS: "60000", RELAY_DEBOUNCE_MS: "0" });
  // The relay's first pass (at start) is counted; then it stops, so that the backlog stays to be read.
  await eventually(async () =>
    valueOf((await scrape()).text, "dpp_leader_job_runs_total", { job: `${service.name}:outbox-relay` }),
  );
  await h.relay!.stop();
  const log = createLogger("metrics-other", "silent");
  const verifier = createContextVerifier({
    audience: "events",
    trusted: { [service.name]: [h.callerKeys.publicKey] },
  });
  other.server = await startGrpcServer("127.0.0.1:0", log, (server) => {
    addService(
      server,
      eventsV1.EventsService,
      {
        listEvents: () => ({ events: [] }),
        readFeed: () => {
          throw new ApiError("resource_not_found");
        },
      } as never,
      log,
      verifier,
    );
    return [eventsV1.EventsService.typeName];
  });
  other.address = `127.0.0.1:${other.server.port}`;
});

afterAll(async () => {
  await h?.close();
  await other.server?.shutdown(1000);
});

const org = `org_${randomBytes(4).toString("hex")}`;

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

/** The scraped text's samples: `name{labels} value` lines, labels as an object. */
function samples(text: string, name: string): Array<{ labels: Record<string, string>; value: number }> {
  const out: Array<{ labels: Record<string, string>; value: number }> = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const m = /^([^{ ]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

function valueOf(text: string, name: string, labels: Record<string, string>): number | undefined {
  return samples(text, name).find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

async function scrape(): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(`http://127.0.0.1:${h.metricsPort}/metrics`);
  return { status: res.status, type: res.headers.get("content-type"), text: await res.text() };
}

test("serves the Prometheus text format at /metrics on its own port, every series labelled with the service", async () => {
  expect(h.metricsPort).toBeGreaterThan(0);
  const { status, type, text } = await scrape();
  expect(status).toBe(200);
  expect(type).toMatch(/^text\/plain; version=0\.0\.4/);
  // Node's and the process's own series.
  expect(valueOf(text, "process_cpu_user_seconds_total", { service: service.name })).toBeGreaterThan(0);
  expect(valueOf(text, "nodejs_heap_size_used_bytes", { service: service.name })).toBeGreaterThan(0);
  expect((await fetch(`http://127.0.0.1:${h.metricsPort}/other`)).status).toBe(404);
});

test("counts gRPC calls by method and code, times them, and counts keyed calls by outcome", async () => {
  const client = h.client(passportV1.PassportService);
  for (let i = 0; i < 3; i++) await client.createPassport({ category: "" }, { context: context() });
  await expect(client.getPassport({ id: "pp_nope" }, { context: context() })).rejects.toThrow();
  const key = `k-${randomBytes(6).toString("hex")}`;
  const first = await client.createPassport({ category: "a" }, { context: context(key, "a") });
  const again = await client.createPassport({ category: "a" }, { context: context(key, "a") });
  expect(again.passport!.id).toBe(first.passport!.id);
  await expect(
    client.createPassport({ category: "b" }, { context: context(key, "b") }),
  ).rejects.toMatchObject({
    code: "idempotency_conflict",
  });

  const { text } = await scrape();
  const s = { service: service.name };
  expect(valueOf(text, "dpp_grpc_server_handled_total", { ...s, method: "CreatePassport", code: "OK" })).toBe(
    5,
  );
  expect(
    valueOf(text, "dpp_grpc_server_handled_total", { ...s, method: "GetPassport", code: "NOT_FOUND" }),
  ).toBe(1);
  expect(
    valueOf(text, "dpp_grpc_server_handled_total", { ...s, method: "CreatePassport", code: "ABORTED" }),
  ).toBe(1);
  expect(valueOf(text, "dpp_grpc_server_handling_seconds_count", { ...s, method: "CreatePassport" })).toBe(6);
  expect(
    valueOf(text, "dpp_grpc_server_handling_seconds_bucket", { ...s, method: "CreatePassport", le: "+Inf" }),
  ).toBe(6);
  expect(valueOf(text, "dpp_idempotency_outcomes_total", { ...s, outcome: "new" })).toBe(1);
  expect(valueOf(text, "dpp_idempotency_outcomes_total", { ...s, outcome: "replayed" })).toBe(1);
  expect(valueOf(text, "dpp_idempotency_outcomes_total", { ...s, outcome: "conflict" })).toBe(1);
});

test("counts its calls to another service by target, method and code", async () => {
  const client = h.client(passportV1.PassportService);
  await client.createPassport({ category: "call-other" }, { context: context() });
  await client.createPassport({ category: "call-other" }, { context: context() });
  const { text } = await scrape();
  expect(
    valueOf(text, "dpp_grpc_client_handled_total", {
      service: service.name,
      target: "events",
      method: "ListEvents",
      code: "OK",
    }),
  ).toBe(2);
});

test("reports the pool, the outbox backlog and its age, read when scraped", async () => {
  const { text } = await scrape();
  const s = { service: service.name };
  expect(valueOf(text, "dpp_pg_pool_max", s)).toBe(5);
  for (const state of ["in_use", "idle", "waiting"])
    expect(valueOf(text, "dpp_pg_pool_connections", { ...s, state })).toBeGreaterThanOrEqual(0);
  // Every create above that ran wrote one event (3 plain, 1 keyed, 2 calling the other service; the replay and
  // the conflict wrote none), and the relay is stopped: 6 rows wait.
  expect(valueOf(text, "dpp_outbox_backlog", s)).toBe(6);
  expect(valueOf(text, "dpp_outbox_oldest_unsent_age_seconds", s)).toBeGreaterThan(0);
  await sql`update outbox set sent_at = now()`.execute(h.db);
  const after = (await scrape()).text;
  expect(valueOf(after, "dpp_outbox_backlog", s)).toBe(0);
  expect(valueOf(after, "dpp_outbox_oldest_unsent_age_seconds", s)).toBe(0);
});

test("reports each leader job's passes, its last success and whether this process leads it", async () => {
  await eventually(async () => (jobPasses >= 1 ? true : undefined));
  const { text } = await scrape();
  const job = { service: service.name, job: "metrics-under-test:sweep" };
  expect(valueOf(text, "dpp_leader_job_runs_total", { ...job, result: "ok" })).toBe(jobPasses);
  expect(valueOf(text, "dpp_leader_job_leader", job)).toBe(1);
  const last = valueOf(text, "dpp_leader_job_last_success_timestamp_seconds", job)!;
  expect(Math.abs(last - Date.now() / 1000)).toBeLessThan(120);
  // The relay is a job too; its first pass ran before it was stopped.
  expect(
    valueOf(text, "dpp_leader_job_runs_total", {
      service: service.name,
      job: `${service.name}:outbox-relay`,
      result: "ok",
    }),
  ).toBeGreaterThanOrEqual(1);
});

test("counts each item of a batch of keyed items as a keyed call (its service found by its pool)", async () => {
  const before = (await scrape()).text;
  const s = { service: service.name };
  const count = (text: string, outcome: string) =>
    valueOf(text, "dpp_idempotency_outcomes_total", { ...s, outcome }) ?? 0;
  const keys = [`item-${randomBytes(4).toString("hex")}`, `item-${randomBytes(4).toString("hex")}`];
  const batch = () =>
    runKeyedItems(
      {
        db: h.db,
        call: { ctx: context(), caller: "gateway" },
        method: "/test/CreateItem",
        encode: (r: { id: string }) => new TextEncoder().encode(JSON.stringify(r)),
        decode: (b) => JSON.parse(new TextDecoder().decode(b)) as { id: string },
      },
      keys.map((key) => ({ key, request: { key } })),
      async (item, ctx) => {
        await transaction(h.db, ctx, (trx: any) => trx.insertInto("item").values({ id: item.key }).execute());
        return { id: item.key };
      },
    );
  expect((await batch()).map((r) => r.replayed)).toEqual([false, false]);
  expect((await batch()).map((r) => r.replayed)).toEqual([true, true]);
  const after = (await scrape()).text;
  expect(count(after, "new") - count(before, "new")).toBe(2);
  expect(count(after, "replayed") - count(before, "replayed")).toBe(2);
});
