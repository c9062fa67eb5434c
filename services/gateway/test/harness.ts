/** The gateway's own store on a test database: organizations, keys, links and grants. */
import type { Kysely } from "kysely";
import { ApiError } from "@dpp/contract";
import { startServiceUnderTest, type TestDatabase, type UnderTest } from "@dpp/kit/testing";
import { Admin } from "../src/modules/identity/admin";
import { gatewayService } from "../src/gateway";
import { IdentityRepository } from "../src/modules/identity/identity.repository";
import type { GatewayDB } from "../src/store/schema";

export interface Store {
  db: TestDatabase;
  /** The gateway, started as in production on its own test database (no service behind it). */
  gateway: UnderTest<typeof gatewayService>;
  sql: Kysely<GatewayDB>;
  identity: IdentityRepository;
  admin: Admin;
  close(): Promise<void>;
}

/** The gateway on a fresh database; its store is what these tests drive. */
export async function startStore(label: string): Promise<Store> {
  const gateway = await startServiceUnderTest(
    gatewayService,
    { HTTP_HOST: "127.0.0.1", HTTP_PORT: "0" },
    label,
  );
  const identity = new IdentityRepository(gateway.db);
  return {
    db: gateway.database,
    gateway,
    sql: gateway.db,
    identity,
    admin: new Admin(identity),
    close: () => gateway.close(),
  };
}

/** Awaits a call that must fail and returns its ApiError. */
export async function refusal(call: Promise<unknown> | (() => unknown)): Promise<ApiError> {
  try {
    await (typeof call === "function" ? call() : call);
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error("expected a refusal, but the call succeeded");
}

export interface HttpResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface HttpRequestOptions {
  method?: string;
  key?: string;
  body?: unknown;
  /** Raw body, sent as is. */
  raw?: string | Uint8Array;
  /** Content-Type of a body (application/json by default; a Content-Type in `headers` wins). */
  contentType?: string;
  headers?: Record<string, string>;
}

/** One HTTP exchange with a gateway at `base`: the answer's status, headers, text and parsed JSON. */
export async function httpRequest(
  base: string,
  path: string,
  o: HttpRequestOptions = {},
): Promise<HttpResponse> {
  const headers: Record<string, string> = { ...o.headers };
  if (o.key) headers.authorization = `Bearer ${o.key}`;
  let body: string | Uint8Array | undefined = o.raw;
  if (body === undefined && o.body !== undefined) body = JSON.stringify(o.body);
  if (body !== undefined) headers["content-type"] ??= o.contentType ?? "application/json";
  const res = await fetch(`${base}${path}`, {
    method: o.method ?? (body === undefined ? "GET" : "POST"),
    headers,
    body,
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}
