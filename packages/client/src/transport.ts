/**
 * One request, sent as the spec's retry rules say (docs/decisions/0017-client-contract-and-sdk.md):
 *
 * - 429 `rate_limited` and 409 `resource_busy`: nothing was recorded; wait `Retry-After`, send again
 *   under the SAME Idempotency-Key.
 * - 500 `internal_error` with `details.reason` `upstream_*` (a service was down, or gave up at its
 *   deadline and applied nothing) or `outcome_unknown` (no answer came back: the write may have
 *   committed): never recorded; wait `Retry-After`, same key, so that the retry finds the committed
 *   result instead of writing twice.
 * - Any other 5xx (503 `storage_unavailable` and `entitlement_unavailable` included) was recorded
 *   against the key and would replay: wait (`Retry-After` when given), send under a NEW key. Only a key
 *   the SDK made is replaced; a key the caller gave is the caller's, so that answer is returned.
 *   502 `portal_unavailable` is never retried: the declaration may be recorded; check first.
 * - No answer (connection failure, timeout): same key, after a backoff.
 *
 * Everything else is the answer. Attempts are bounded (`maxRetries`) and so is a wait (`maxRetryAfterMs`).
 */
import { DppConnectionError } from "./errors";

export interface RetryEvent {
  /** The attempt that is about to be made (2 for the first retry). */
  attempt: number;
  /** Why: the answer's error code, or `connection_error` / `timeout` when there was none. */
  reason: string;
  status: number | undefined;
  /** The `Request-Id` of the answer that is retried, if there was one. */
  requestId: string | undefined;
  waitMs: number;
  /** The Idempotency-Key the retry is sent under (undefined for a request that takes none). */
  idempotencyKey: string | undefined;
  /** True when the retry uses a new key because the answer was recorded against the old one. */
  newIdempotencyKey: boolean;
}

export interface TransportOptions {
  fetch: typeof globalThis.fetch;
  maxRetries: number;
  timeoutMs: number;
  /** Longest Retry-After the client waits for; a longer one is returned to the caller. */
  maxRetryAfterMs: number;
  /** First backoff when the answer names no wait (doubled per attempt, with jitter). */
  retryDelayMs: number;
  onRetry?: (event: RetryEvent) => void;
}

/** How a request uses the Idempotency-Key header. */
export type KeyPolicy =
  /** the operation takes no key */
  | { kind: "none" }
  /** a key the SDK made for this call: replaced after a recorded 5xx */
  | { kind: "generated"; key: string }
  /** the caller's key: never replaced */
  | { kind: "caller"; key: string };

export interface CallSettings {
  key: KeyPolicy;
  timeoutMs?: number;
  maxRetries?: number;
  signal?: AbortSignal;
}

/** What the last attempt of a call was: filled in while the call runs. */
export interface Attempts {
  count: number;
  idempotencyKey: string | undefined;
}

/**
 * A fresh Idempotency-Key: printable ASCII, well under 255 characters. Web Crypto's `randomUUID`, global in
 * Node 20 and in browsers (secure contexts), so that the SDK imports no Node module.
 */
export function newIdempotencyKey(): string {
  return `dpp-client-${globalThis.crypto.randomUUID()}`;
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

interface Decision {
  reason: string;
  waitMs: number;
  newKey: boolean;
}

/** What fetch throws when there is no answer: a failed connection (TypeError) or an aborted attempt. */
function isNetworkFailure(err: unknown): boolean {
  const name = (err as { name?: unknown } | null)?.name;
  return err instanceof TypeError || name === "AbortError" || name === "TimeoutError";
}

/** Waits `ms` before a retry, or rejects when the signal aborts; leaves no listener on a long-lived signal. */
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (ms <= 0) return resolve();
    const aborted = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", aborted);
      resolve();
    }, ms);
    signal?.addEventListener("abort", aborted, { once: true });
  });

export class Transport {
  constructor(private readonly o: TransportOptions) {}

  private backoff(attempt: number): number {
    const base = this.o.retryDelayMs * 2 ** (attempt - 1);
    return Math.round(base / 2 + Math.random() * (base / 2));
  }

  /** Whether (and how) to retry an answer; null when it is the answer. */
  private async decide(res: Response, policy: KeyPolicy, attempt: number): Promise<Decision | null> {
    if (res.status < 400) return null;
    const wait = retryAfterMs(res.headers.get("retry-after"));
    if (wait !== undefined && wait > this.o.maxRetryAfterMs) return null;
    const waitMs = wait ?? this.backoff(attempt);
    let body: any;
    try {
      body = await res.clone().json();
    } catch {
      body = undefined;
    }
    const code: string | undefined = typeof body?.error?.code === "string" ? body.error.code : undefined;
    const reason: unknown = body?.error?.details?.reason;
    if (res.status === 429) return { reason: code ?? "rate_limited", waitMs, newKey: false };
    if (res.status === 409 && code === "resource_busy") return { reason: code, waitMs, newKey: false };
    if (res.status < 500 || code === "portal_unavailable") return null;
    // Never recorded, and (outcome_unknown) perhaps applied: the same key finds the committed result.
    if (
      code === "internal_error" &&
      typeof reason === "string" &&
      (reason.startsWith("upstream_") || reason === "outcome_unknown")
    )
      return { reason: `${code}:${reason}`, waitMs, newKey: false };
    // Recorded against the key: it would replay. A caller's key stays the caller's.
    if (policy.kind === "caller") return null;
    return { reason: code ?? `http_${res.status}`, waitMs, newKey: policy.kind === "generated" };
  }

  /**
   * The `fetch` for one call: sends the request, retrying as the rules above say, and returns the
   * final answer (success or refusal) for the caller to read. Throws DppConnectionError when no
   * attempt got an answer.
   */
  fetcher(settings: CallSettings, attempts: Attempts): (request: Request) => Promise<Response> {
    return async (request: Request) => {
      const maxRetries = settings.maxRetries ?? this.o.maxRetries;
      const timeoutMs = settings.timeoutMs ?? this.o.timeoutMs;
      const body = request.body ? await request.text() : undefined;
      let policy = settings.key;
      for (;;) {
        attempts.count++;
        const key = policy.kind === "none" ? undefined : policy.key;
        attempts.idempotencyKey = key;
        const headers = new Headers(request.headers);
        if (key !== undefined) headers.set("Idempotency-Key", key);
        const timeout = AbortSignal.timeout(timeoutMs);
        const signal = settings.signal ? AbortSignal.any([settings.signal, timeout]) : timeout;
        let res: Response;
        try {
          res = await this.o.fetch(request.url, { method: request.method, headers, body, signal });
        } catch (err) {
          if (settings.signal?.aborted) throw settings.signal.reason;
          if (!isNetworkFailure(err)) throw err;
          const timedOut = timeout.aborted;
          if (attempts.count > maxRetries)
            throw new DppConnectionError(
              timedOut
                ? `No answer within ${timeoutMs} ms (${attempts.count} attempts).`
                : `Could not reach the API (${attempts.count} attempts): ${(err as Error).message}`,
              timedOut,
              key,
              attempts.count,
              { cause: err },
            );
          const waitMs = this.backoff(attempts.count);
          this.o.onRetry?.({
            attempt: attempts.count + 1,
            reason: timedOut ? "timeout" : "connection_error",
            status: undefined,
            requestId: undefined,
            waitMs,
            idempotencyKey: key,
            newIdempotencyKey: false,
          });
          await sleep(waitMs, settings.signal);
          continue;
        }
        const decision = attempts.count > maxRetries ? null : await this.decide(res, policy, attempts.count);
        if (!decision) return res;
        if (decision.newKey) policy = { kind: "generated", key: newIdempotencyKey() };
        this.o.onRetry?.({
          attempt: attempts.count + 1,
          reason: decision.reason,
          status: res.status,
          requestId: res.headers.get("request-id") ?? undefined,
          waitMs: decision.waitMs,
          idempotencyKey: policy.kind === "none" ? undefined : policy.key,
          newIdempotencyKey: decision.newKey,
        });
        await res.body?.cancel();
        await sleep(decision.waitMs, settings.signal);
      }
    };
  }
}
