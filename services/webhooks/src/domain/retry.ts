/**
 * When a failed event is tried again: exponential backoff from `baseMs`, doubling per consecutive failure up to
 * `maxMs`, with jitter (each delay drawn between half and all of it), so that receivers coming back are not hit
 * by every endpoint at once. Retries go on until the endpoint has been failing for `disableAfterMs` (default
 * five days, so at least the 72 hours integrators expect), when it is disabled.
 */
export interface RetryPolicy {
  baseMs: number;
  maxMs: number;
  disableAfterMs: number;
}

export function retryDelayMs(p: RetryPolicy, failures: number, random: () => number = Math.random): number {
  const exp = Math.min(p.maxMs, p.baseMs * 2 ** Math.min(Math.max(failures - 1, 0), 40));
  return Math.round(exp / 2 + (random() * exp) / 2);
}

/** What a failed attempt does to its endpoint. */
export function afterFailure(
  p: RetryPolicy,
  o: { status: number | undefined; failingSince: Date | null; failures: number; now: Date },
): { disable: "gone" | "failing" } | { retryAt: Date } {
  if (o.status === 410) return { disable: "gone" };
  const since = o.failingSince ?? o.now;
  if (o.now.getTime() - since.getTime() >= p.disableAfterMs) return { disable: "failing" };
  return { retryAt: new Date(o.now.getTime() + retryDelayMs(p, o.failures)) };
}
