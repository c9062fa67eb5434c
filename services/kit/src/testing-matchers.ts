/**
 * Jest matchers for refusals, registered when @dpp/kit/testing is loaded by a test:
 *
 *   await expect(client.createThing(req, { context })).rejects.toBeRefusedWith("validation_failed");
 *   await expect(call).rejects.toBeRefusedWith("invalid_request", { issues: [expect.objectContaining({ rule: "range" })] });
 *
 * A refusal is an ApiError of that code (the kit's client turns a service's refusal into one); `details`, when
 * given, must match the refusal's details as toMatchObject matches.
 */
import { ApiError, type ErrorCode } from "@dpp/contract";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace jest {
    interface Matchers<R> {
      /** The value (a rejection, with `.rejects`) is an ApiError with this code, and these details when given. */
      toBeRefusedWith(code: ErrorCode, details?: Record<string, unknown>): R;
    }
  }
}

interface MatcherContext {
  equals(a: unknown, b: unknown): boolean;
  utils: { printReceived(v: unknown): string; printExpected(v: unknown): string };
  isNot: boolean;
}

function toBeRefusedWith(
  this: MatcherContext,
  received: unknown,
  code: ErrorCode,
  details?: Record<string, unknown>,
) {
  const { printExpected, printReceived } = this.utils;
  if (!(received instanceof ApiError))
    return {
      pass: false,
      message: () =>
        `expected a refusal ${printExpected(code)}, got ${received instanceof Error ? `${received.name}: ${received.message}` : printReceived(received)}`,
    };
  const sameCode = received.code === code;
  // toMatchObject's rule: every key given is matched, recursively; asymmetric matchers are honoured.
  const sameDetails =
    details === undefined ||
    Object.entries(details).every(
      ([k, v]) => this.equals(received.details[k], v) || matchesPart(this, received.details[k], v),
    );
  return {
    pass: sameCode && sameDetails,
    message: () =>
      this.isNot
        ? `expected no refusal ${printExpected(code)}, got ${printReceived(received.code)}`
        : !sameCode
          ? `expected the refusal ${printExpected(code)}, got ${printReceived(received.code)} (${received.message})`
          : `expected details matching ${printExpected(details)}, got ${printReceived(received.details)}`,
  };
}

function matchesPart(ctx: MatcherContext, actual: unknown, expected: unknown): boolean {
  if (expected === null || typeof expected !== "object" || actual === null || typeof actual !== "object")
    return ctx.equals(actual, expected);
  if (Array.isArray(expected))
    return (
      Array.isArray(actual) &&
      actual.length === expected.length &&
      expected.every((e, i) => ctx.equals(actual[i], e) || matchesPart(ctx, actual[i], e))
    );
  return Object.entries(expected as Record<string, unknown>).every(([k, v]) => {
    const a = (actual as Record<string, unknown>)[k];
    return ctx.equals(a, v) || matchesPart(ctx, a, v);
  });
}

/** Registers the matchers with jest's `expect`; a no-op outside jest. */
export function registerRefusalMatchers(): void {
  const g = globalThis as { expect?: { extend(m: Record<string, unknown>): void } };
  g.expect?.extend({ toBeRefusedWith });
}
