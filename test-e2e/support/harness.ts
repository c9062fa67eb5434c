/**
 * Black-box harness: a fresh database, the whole stack as separate processes,
 * and an HTTP client that speaks to the gateway as an integrator would.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createDb } from "@dpp/kit/internal";
import { createTestDatabase, type TestDatabase } from "@dpp/kit/testing";
import { migrateAll, startStack, type Stack, type StackOptions } from "@dpp/stack";
import { Admin, GATEWAY_SCHEMA, IdentityRepository, type GatewayDB } from "@dpp/gateway";
import type { Kysely } from "kysely";
import { Dpp, type DppOptions } from "@dpp/client";
import { assertResponseMatchesContract } from "./openapi-validator";

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  method?: string;
  key?: string | null;
  body?: unknown;
  /** Raw body (text or bytes), sent as is. */
  raw?: string | Uint8Array;
  headers?: Record<string, string>;
}

export interface Harness {
  stack: Stack<"process">;
  /** Where each service (each replica: <name>-<n>.log) writes its log. */
  logDir: string;
  db: TestDatabase;
  admin: Admin;
  gatewayDb: Kysely<GatewayDB>;
  request<T = any>(path: string, o?: RequestOptions): Promise<ApiResponse<T>>;
  /**
   * The SDK (@dpp/client) as an integrator uses it, against this stack; every answer it receives is
   * checked against the OpenAPI document like those of `request()`.
   */
  sdk(apiKey: string, options?: Partial<DppOptions>): Dpp;
  /** A fresh organization with a test key and a live key holding every scope. */
  tenant(name?: string, plan?: string): Promise<Tenant>;
  /**
   * Fails unless `res` has `status`, with what a maintainer needs to find the cause of an unexpected answer: its
   * body and every line of the stack's service logs that names its request id.
   */
  expectStatus(res: ApiResponse, status: number): void;
  close(): Promise<void>;
}

export interface Tenant {
  organizationId: string;
  testKey: string;
  liveKey: string;
  testKeyId: string;
  liveKeyId: string;
}

export interface HarnessOptions {
  /** Variables of every service of this stack (over the test process's own environment). */
  env?: Record<string, string>;
  /** Restart services that die, as npm start does (off: a test that kills a service starts it again itself). */
  supervise?: StackOptions["supervise"];
  /** Replicas of every service, or of each (StackOptions.replicas; 1 by default). */
  replicas?: StackOptions["replicas"];
  /** Variables of one service (over `env`). */
  serviceEnv?: StackOptions["serviceEnv"];
  /** Level of the services' logs (warn by default). */
  logLevel?: string;
  /** Node's own flags of each service process (StackOptions.nodeArgs). */
  nodeArgs?: StackOptions["nodeArgs"];
}

/**
 * Every test sends its requests from 127.0.0.1, so the budget of failed authentications per client address
 * (60 per minute in production) is raised unless the test sets it: suites that probe refusals would exhaust it.
 * The kit's checks of the keyed-call contract are on (KIT_TEST_CHECKS, docs/writes-under-a-key.md): a keyed call
 * whose work breaks it fails.
 */
const HARNESS_ENV = { RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: "100000", KIT_TEST_CHECKS: "1" };

export async function startHarness(label: string, o: HarnessOptions = {}): Promise<Harness> {
  const db = await createTestDatabase(label);
  const logDir = path.join(os.tmpdir(), `dpp-e2e-${db.name}`);
  await migrateAll(db.url, logDir);
  const env: Record<string, string> = { ...o.env };
  for (const [k, v] of Object.entries(HARNESS_ENV)) if (process.env[k] === undefined) env[k] ??= v;
  const stack = await startStack({
    // Each service its own process, as in production (the tests kill and signal processes).
    hosting: "process",
    databaseUrl: db.url,
    logDir,
    logLevel: o.logLevel ?? "warn",
    env,
    supervise: o.supervise,
    replicas: o.replicas,
    serviceEnv: o.serviceEnv,
    nodeArgs: o.nodeArgs,
  });
  const gatewayDb = createDb<GatewayDB>({
    url: db.url,
    schema: GATEWAY_SCHEMA,
    applicationName: "e2e",
    max: 2,
  });
  const admin = new Admin(new IdentityRepository(gatewayDb));

  const request = async <T>(p: string, o: RequestOptions = {}): Promise<ApiResponse<T>> => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.key) headers.authorization = `Bearer ${o.key}`;
    let body: string | Uint8Array | undefined = o.raw;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers["content-type"] ??= "application/json";
    }
    const method = o.method ?? (body ? "POST" : "GET");
    const res = await fetch(stack.baseUrl + p, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    // Every response is checked against the OpenAPI document; a mismatch fails the test.
    assertResponseMatchesContract({
      method,
      path: p,
      status: res.status,
      headers: res.headers,
      body: parsed,
      text,
    });
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  };

  /** fetch, then the same contract check as request(); the SDK's transport calls it per attempt. */
  const checkedFetch: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    const url = new URL(input instanceof Request ? input.url : String(input));
    // Only the API's answers are the contract's: a signed upload or download URL is storage's.
    if (!url.href.startsWith(stack.baseUrl)) return res;
    const text = await res.clone().text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    assertResponseMatchesContract({
      method: init?.method ?? (input instanceof Request ? input.method : "GET"),
      path: url.pathname.replace(/^\/v1/, "") + url.search,
      status: res.status,
      headers: res.headers,
      body: parsed,
      text,
    });
    return res;
  };
  const sdk = (apiKey: string, options: Partial<DppOptions> = {}) =>
    new Dpp({ apiKey, baseUrl: stack.baseUrl, fetch: checkedFetch, ...options });

  const tenant = async (name = "Brand", plan = "pro"): Promise<Tenant> => {
    const org = await admin.createOrganization(name, plan, plan === "trial" ? "trialing" : "active");
    const test = await admin.createKey({ organizationId: org.id, livemode: false });
    const live = await admin.createKey({ organizationId: org.id, livemode: true });
    return {
      organizationId: org.id,
      testKey: test.key,
      liveKey: live.key,
      testKeyId: test.record.id,
      liveKeyId: live.record.id,
    };
  };

  const expectStatus = (res: ApiResponse, status: number) => {
    if (res.status === status) return;
    const requestId = res.headers.get("request-id");
    const lines = requestId ? logLinesNaming(logDir, requestId) : [];
    throw new Error(
      `expected ${status}, got ${res.status} ${res.text}\n` +
        (lines.length > 0
          ? `log lines of ${requestId}:\n${lines.join("\n")}`
          : `no log line names ${requestId}`),
    );
  };

  return {
    stack,
    logDir,
    db,
    admin,
    gatewayDb,
    request,
    sdk,
    tenant,
    expectStatus,
    close: async () => {
      await stack.stop();
      await gatewayDb.destroy();
      await db.drop();
    },
  };
}

/** The lines of the service logs in `logDir` (one file per service) that contain `text`, each with its file's name. */
function logLinesNaming(logDir: string, text: string): string[] {
  const out: string[] = [];
  for (const file of fs
    .readdirSync(logDir)
    .filter((f) => f.endsWith(".log"))
    .sort())
    for (const line of fs.readFileSync(path.join(logDir, file), "utf8").split("\n"))
      if (line.includes(text)) out.push(`${file}: ${line}`);
  return out;
}

/** The documented bound on a key change reaching a gateway that cached the key (docs/decisions/0002, 0021). */
export const KEY_CACHE_BOUND_MS = 5000;

/**
 * A change to a key that a request already used (revoked, rotated, its window closed) is refused once the gateway's
 * change notification arrives, or its cache entry ends, within KEY_CACHE_BOUND_MS: not necessarily on the very next
 * request. Sends `request` until it is no longer answered 200, every 100 ms up to that bound, and returns the last
 * answer.
 */
export async function untilRefused(request: () => Promise<ApiResponse>): Promise<ApiResponse> {
  const until = Date.now() + KEY_CACHE_BOUND_MS;
  let res = await request();
  while (res.status === 200 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    res = await request();
  }
  return res;
}

/**
 * The same bound for a change the gateway caches with the key's identity (an organization's plan or its
 * subscription status): sends `request` every 100 ms until `seen` holds for its answer, up to
 * KEY_CACHE_BOUND_MS, and returns the last answer.
 */
export async function untilSeen(
  request: () => Promise<ApiResponse>,
  seen: (res: ApiResponse) => boolean,
): Promise<ApiResponse> {
  const until = Date.now() + KEY_CACHE_BOUND_MS;
  let res = await request();
  while (!seen(res) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    res = await request();
  }
  return res;
}

/** Asserts the error envelope shape and returns its error object. */
export function envelope(res: ApiResponse): {
  code: string;
  message: string;
  documentation_url: string;
  request_id: string;
  details: Record<string, any>;
} {
  const e = (res.body as { error?: any })?.error;
  if (!e) throw new Error(`expected an error envelope, got ${res.status} ${res.text}`);
  expect(Object.keys(e).sort()).toEqual(["code", "details", "documentation_url", "message", "request_id"]);
  expect(typeof e.message).toBe("string");
  expect(e.request_id).toBe(res.headers.get("request-id"));
  return e;
}
