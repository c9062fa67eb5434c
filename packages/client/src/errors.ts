/**
 * What a call can throw: the API's refusal, typed by its code (`DppError`), or no answer at all
 * (`DppConnectionError`). Branch on `code`, never on `message` (the spec's error rules).
 */
import type { components } from "./openapi.generated";

type Schemas = components["schemas"];

/** Every error code of v1 the document lists. */
export type KnownErrorCode = Schemas["ErrorCode"];
/** An error code: one of v1's, or one added later (treat an unknown code as a default case). */
export type ErrorCode = KnownErrorCode | (string & {});
export type ErrorDetails = Schemas["ErrorDetails"];
export type ErrorEnvelope = Schemas["ErrorEnvelope"];

/** The API refused the request (a non-2xx answer, or the 202 `human_approval_required`). */
export class DppError<C extends ErrorCode = ErrorCode> extends Error {
  override readonly name = "DppError";
  /** The stable machine-readable code: branch on this. */
  readonly code: C;
  /** The HTTP status the code is answered with. */
  readonly status: number;
  /** Machine-readable context; the keys depend on the code (`issues`, `current_version`, `limit_bytes` …). */
  readonly details: ErrorDetails;
  /** The `Request-Id` of the answer (the `request_id` of the envelope): quote it to support. */
  readonly requestId: string;
  readonly documentationUrl: string;
  /** Seconds the answer asked to wait (`Retry-After`), when it did. */
  readonly retryAfter: number | undefined;
  /** The Idempotency-Key of the last attempt, when the request carried one. */
  readonly idempotencyKey: string | undefined;
  /** Attempts made (1 when the first answer was final). */
  readonly attempts: number;

  constructor(
    status: number,
    envelope: Schemas["Error"],
    meta: { retryAfter?: number; idempotencyKey?: string; attempts: number },
  ) {
    super(envelope.message);
    this.code = envelope.code as C;
    this.status = status;
    this.details = envelope.details ?? {};
    this.requestId = envelope.request_id;
    this.documentationUrl = envelope.documentation_url;
    this.retryAfter = meta.retryAfter;
    this.idempotencyKey = meta.idempotencyKey;
    this.attempts = meta.attempts;
  }
}

/** True when `err` is a `DppError` (with one of `codes`, when given); narrows its `code`. */
export function isDppError<C extends ErrorCode>(err: unknown, ...codes: C[]): err is DppError<C> {
  return err instanceof DppError && (codes.length === 0 || (codes as string[]).includes(err.code));
}

/** No answer: the connection failed or the timeout passed, on every attempt. */
export class DppConnectionError extends Error {
  override readonly name = "DppConnectionError";
  constructor(
    message: string,
    /** True when the last attempt ran out of time rather than failing to connect. */
    readonly timedOut: boolean,
    /** The Idempotency-Key of the last attempt: a later retry under it finds a committed result. */
    readonly idempotencyKey: string | undefined,
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** An answer that is neither the documented success nor the error envelope (a proxy's page, say). */
export class DppProtocolError extends Error {
  override readonly name = "DppProtocolError";
  constructor(
    message: string,
    readonly status: number,
    readonly requestId: string | undefined,
  ) {
    super(message);
  }
}
