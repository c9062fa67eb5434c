/**
 * What every resource of the SDK shares: the client's options, the typed client and the Transport (`Core`),
 * and the settings of reads and writes. A resource is a class in its own file that takes `(core, organization)`
 * and calls `core.send(...)` with `readSettings` or `writeSettings`; OrganizationClient (client.ts) holds one of
 * each.
 */
import createClient, { type Client } from "openapi-fetch";
import { DppError, DppProtocolError } from "./errors";
import type { components, paths } from "./openapi.generated";
import { ListIterator, type Page } from "./pagination";
import {
  newIdempotencyKey,
  retryAfterMs,
  Transport,
  type Attempts,
  type CallSettings,
  type RetryEvent,
} from "./transport";

export const SDK_VERSION = "1.0.0";

export interface DppOptions {
  /**
   * A secret key, `dpp_sk_test_…` or `dpp_sk_live_…` (its mode is the mode of every call); or an authority token,
   * `dpp_at_…`, which only `documents.authorityDownload` accepts.
   */
  apiKey: string;
  /** The root of v1, e.g. `https://api.example.com/v1`. */
  baseUrl: string;
  /** Retries after the first attempt (default 3). */
  maxRetries?: number;
  /** Per attempt, in milliseconds (default 30 000). */
  timeoutMs?: number;
  /** The longest Retry-After the client waits for (default 60 000 ms); a longer one is returned. */
  maxRetryAfterMs?: number;
  /** First backoff when an answer names no wait (default 500 ms, doubled per attempt). */
  retryDelayMs?: number;
  /** Called before each retry: log it, count it. */
  onRetry?: (event: RetryEvent) => void;
  /** A fetch of your own (tests, proxies); default `globalThis.fetch`. */
  fetch?: typeof globalThis.fetch;
}

export interface RequestOptions {
  timeoutMs?: number;
  maxRetries?: number;
  signal?: AbortSignal;
}

export interface WriteOptions extends RequestOptions {
  /** Your own key for this write (1 to 255 printable ASCII characters); default: a fresh one. */
  idempotencyKey?: string;
}

export interface ConditionalOptions extends WriteOptions {
  /** The `version` you read: the write is refused with 412 `precondition_failed` if it changed since. */
  expectedVersion?: number;
  /** `*`: the passport must exist. */
  ifMatch?: "*";
}

/** How the final answer of a call came. */
export interface ResponseInfo {
  status: number;
  /** The `Request-Id` header: quote it to support. */
  requestId: string | undefined;
  /** The Idempotency-Key of the last attempt (undefined for calls that take none). */
  idempotencyKey: string | undefined;
  /** True when the answer is the recorded answer to an earlier request under the same key. */
  replayed: boolean;
  attempts: number;
}

export type WithResponse<T> = T & { readonly lastResponse: ResponseInfo };

type ErrorEnvelope202 = components["schemas"]["ErrorEnvelope202"];
type Fetcher = (request: Request) => Promise<Response>;

function isEnvelope(v: unknown): v is components["schemas"]["ErrorEnvelope"] {
  if (typeof v !== "object" || v === null || !("error" in v)) return false;
  const e = (v as { error: unknown }).error;
  return typeof e === "object" && e !== null && typeof (e as { code?: unknown }).code === "string";
}

export const writeSettings = (o: WriteOptions): CallSettings => ({
  ...o,
  key: o.idempotencyKey
    ? { kind: "caller", key: o.idempotencyKey }
    : { kind: "generated", key: newIdempotencyKey() },
});
export const readSettings = (o: RequestOptions): CallSettings => ({ ...o, key: { kind: "none" } });

export function conditionalHeaders(o: ConditionalOptions): { "Expected-Version"?: number; "If-Match"?: "*" } {
  return {
    ...(o.expectedVersion !== undefined ? { "Expected-Version": o.expectedVersion } : {}),
    ...(o.ifMatch !== undefined ? { "If-Match": o.ifMatch } : {}),
  };
}

/** The typed client and the transport every resource shares. */
export class Core {
  readonly api: Client<paths>;
  /** The fetch the client was given, for requests outside the API (a signed upload or download URL). */
  readonly fetch: typeof globalThis.fetch;
  private readonly transport: Transport;

  constructor(o: DppOptions) {
    this.fetch = o.fetch ?? globalThis.fetch;
    this.transport = new Transport({
      fetch: o.fetch ?? globalThis.fetch,
      maxRetries: o.maxRetries ?? 3,
      timeoutMs: o.timeoutMs ?? 30_000,
      maxRetryAfterMs: o.maxRetryAfterMs ?? 60_000,
      retryDelayMs: o.retryDelayMs ?? 500,
      onRetry: o.onRetry,
    });
    this.api = createClient<paths>({
      baseUrl: o.baseUrl.replace(/\/+$/, ""),
      headers: { authorization: `Bearer ${o.apiKey}`, "user-agent": `dpp-client-ts/${SDK_VERSION}` },
    });
  }

  /** Runs one call through the transport; throws its refusal, returns its body with `lastResponse`. */
  async send<T>(
    settings: CallSettings,
    run: (fetch: Fetcher) => Promise<{ data?: T; error?: unknown; response: Response }>,
  ): Promise<WithResponse<Exclude<T, ErrorEnvelope202>>> {
    const attempts: Attempts = { count: 0, idempotencyKey: undefined };
    const { data, error, response } = await run(this.transport.fetcher(settings, attempts));
    const info: ResponseInfo = {
      status: response.status,
      requestId: response.headers.get("request-id") ?? undefined,
      idempotencyKey: attempts.idempotencyKey,
      replayed: response.headers.get("idempotent-replayed") === "true",
      attempts: attempts.count,
    };
    const body: unknown = error ?? data;
    if (isEnvelope(body)) {
      const wait = retryAfterMs(response.headers.get("retry-after"));
      throw new DppError(response.status, body.error, {
        retryAfter: wait === undefined ? undefined : wait / 1000,
        idempotencyKey: info.idempotencyKey,
        attempts: info.attempts,
      });
    }
    if (error !== undefined || typeof data !== "object" || data === null)
      throw new DppProtocolError(
        `Unexpected ${response.status} answer: ${JSON.stringify(body)?.slice(0, 200)}`,
        response.status,
        info.requestId,
      );
    Object.defineProperty(data, "lastResponse", { value: info, enumerable: false });
    return data as WithResponse<Exclude<T, ErrorEnvelope202>>;
  }

  /** A list as an iterator: each page is one call. */
  list<T>(
    fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
    startCursor: string | undefined,
  ): ListIterator<T> {
    return new ListIterator(fetchPage, startCursor);
  }
}
