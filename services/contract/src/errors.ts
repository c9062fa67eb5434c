/**
 * The error model. Services raise ApiError with a public error code and machine
 * details; this one table maps every code to its HTTP status; the gateway builds
 * the envelope from it. No handler builds an envelope by hand.
 */
export const ERROR_TABLE = {
  invalid_key: { status: 401, message: "The API key is not valid." },
  key_revoked: { status: 401, message: "The API key has been revoked." },
  key_expired: { status: 401, message: "The API key has expired." },
  key_rotated: {
    status: 401,
    message: "The API key was replaced by rotation and its overlap window has closed.",
  },
  mode_mismatch: { status: 400, message: "The key's prefix does not match the mode of the credential." },
  insufficient_scope: { status: 403, message: "The credential lacks the scope this endpoint requires." },
  organization_not_found_or_not_granted: {
    status: 404,
    message: "No such organization, or this key holds no grant on it.",
  },
  resource_not_found: { status: 404, message: "No such resource." },
  wildcard_not_supported: { status: 400, message: "The organization '-' is reserved and cannot be used." },
  invalid_request: { status: 400, message: "The request could not be understood." },
  method_not_allowed: { status: 405, message: "This endpoint does not answer this method." },
  payload_too_large: { status: 413, message: "The request body is larger than this endpoint accepts." },
  unsupported_media_type: { status: 415, message: "The request body must be sent as application/json." },
  validation_failed: { status: 422, message: "The request body failed validation." },
  idempotency_conflict: {
    status: 409,
    message: "The Idempotency-Key was already used with a different request.",
  },
  already_exists: { status: 409, message: "A resource with this identifier already exists." },
  gtin_in_use: { status: 409, message: "The GTIN belongs to another passport." },
  variant_limit_reached: { status: 422, message: "The passport has reached its variant limit." },
  variant_review_required: { status: 409, message: "Assistant-written sizes and colours need review first." },
  variant_review_changed: {
    status: 409,
    message: "Sizes or colours changed after the reviewed fingerprint.",
  },
  precondition_failed: { status: 412, message: "The resource changed since the supplied version." },
  resource_busy: { status: 409, message: "Another request is modifying the resource; retry later." },
  gtin_required: { status: 422, message: "A GTIN is required for this operation." },
  not_trashed: { status: 409, message: "Only a trashed passport can be restored." },
  wrong_status: { status: 409, message: "The passport's status does not allow this operation." },
  publish_limit_reached: { status: 402, message: "All publish slots of the plan are used." },
  unit_limit_reached: { status: 402, message: "The passport carries more units than the plan allows." },
  document_missing: {
    status: 422,
    message: "A required field is satisfied only by a document that is no longer attached.",
  },
  document_feeds_extraction: {
    status: 409,
    message: "The document records where passport values came from.",
  },
  document_feeds_reading: { status: 409, message: "The document supports recorded battery values." },
  invalid_input: { status: 400, message: "The request body failed validation." },
  invalid_observed_on: { status: 400, message: "observed_on is not a valid date." },
  invalid_source: { status: 400, message: "The source is not valid." },
  invalid_field: { status: 400, message: "The field is not valid." },
  invalid_note: { status: 400, message: "The note is not valid." },
  invalid_value: { status: 400, message: "The value is not valid." },
  invalid_document_id: { status: 400, message: "The document id is not valid." },
  unit_status_required: { status: 400, message: "The unit already has a status; choose a status instead." },
  unit_status_transition_forbidden: { status: 409, message: "This unit status transition is not allowed." },
  unit_status_history_conflict: {
    status: 409,
    message: "The status conflicts with the unit's recorded history.",
  },
  unit_status_not_allowed: { status: 422, message: "The status is not one of the allowed values." },
  unit_reading_document_unavailable: { status: 400, message: "No such document for a reading." },
  delegation_required: { status: 403, message: "Filing needs an active delegation." },
  attestation_required: { status: 403, message: "The operation needs an accepted attestation." },
  test_mode_refused: { status: 403, message: "Test-mode credentials cannot perform this operation." },
  human_approval_required: { status: 202, message: "A person must approve this request." },
  connector_writes_drafts_only: { status: 409, message: "A connector may only change drafts." },
  proposal_requires_assistant: { status: 403, message: "Proposals are refused for this credential kind." },
  no_changes: { status: 422, message: "The proposal changes nothing." },
  portal_unavailable: { status: 502, message: "The portal did not answer in time." },
  storage_unavailable: { status: 503, message: "Uploaded files could not be confirmed in storage." },
  entitlement_unavailable: { status: 503, message: "The entitlement could not be confirmed." },
  no_subscription: { status: 402, message: "The organization has no subscription for this operation." },
  payment_overdue: { status: 402, message: "The organization's payment is overdue." },
  plan_required: { status: 402, message: "The organization's plan does not allow this operation." },
  rate_limited: { status: 429, message: "Too many requests." },
  grant_conflict: { status: 409, message: "The grant conflicts with an existing one." },
  grantor_not_seated: {
    status: 403,
    message: "The granting key's organization does not manage this client.",
  },
  france_mandate_required: {
    status: 403,
    message: "filings:write needs the client's confirmed written authorisation.",
  },
  key_not_grantable: { status: 409, message: "The key cannot be granted." },
  scope_exceeds_key: { status: 422, message: "A requested scope exceeds the key's own scopes." },
  configuration_error: { status: 500, message: "The service is misconfigured." },
  internal_error: { status: 500, message: "An internal error occurred." },
  cursor_invalid: { status: 400, message: "The cursor is not valid for this list and these filters." },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_TABLE;

export type ErrorDetails = Record<string, unknown>;

/** One entry of details.issues for a refused body or query. */
export interface Issue {
  source: { pointer: string } | { parameter: string } | { header: string };
  rule: string;
  message?: string;
}

export function isErrorCode(code: string): code is ErrorCode {
  return Object.prototype.hasOwnProperty.call(ERROR_TABLE, code);
}

export function httpStatusOf(code: ErrorCode): number {
  return ERROR_TABLE[code].status;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails;
  /**
   * Response headers the gateway must add (e.g. Retry-After, Allow); across gRPC they travel in the
   * `headers` field of dpp.common.v1.ApiError, never inside the details.
   */
  readonly headers: Record<string, string>;
  /**
   * Set on a refusal replayed under an Idempotency-Key: the request it was first given to, whose id the
   * envelope repeats (the Request-Id header still names this exchange).
   */
  replayedRequestId?: string;

  constructor(
    code: ErrorCode,
    message?: string,
    details: ErrorDetails = {},
    headers: Record<string, string> = {},
  ) {
    super(message ?? ERROR_TABLE[code].message);
    this.name = "ApiError";
    this.code = code;
    this.details = details;
    this.headers = headers;
  }

  get status(): number {
    return httpStatusOf(this.code);
  }
}

/** validation_failed with details.issues (JSON Pointers into the body). */
export function validationFailed(issues: Issue[], message?: string): ApiError {
  const first = issues[0];
  const where = first && "pointer" in first.source ? ` at ${first.source.pointer || "/"}` : "";
  return new ApiError(
    "validation_failed",
    message ??
      `The request body failed validation (${issues.length} issue${issues.length === 1 ? "" : "s"}${where}).`,
    { issues },
  );
}

/** invalid_request for a query parameter or header, with details.issues. */
export function invalidParameter(parameter: string, rule: string, message: string): ApiError {
  return new ApiError("invalid_request", message, { issues: [{ source: { parameter }, rule, message }] });
}

export const DOCUMENTATION_BASE_URL = "https://docs.dpp.example/errors";

export interface ErrorEnvelope {
  error: {
    code: ErrorCode;
    message: string;
    documentation_url: string;
    request_id: string;
    details: ErrorDetails;
  };
}

export function toEnvelope(
  err: ApiError,
  requestId: string,
  documentationBase = DOCUMENTATION_BASE_URL,
): ErrorEnvelope {
  return {
    error: {
      code: err.code,
      message: err.message,
      documentation_url: `${documentationBase}#${err.code}`,
      request_id: err.replayedRequestId ?? requestId,
      details: err.details,
    },
  };
}

/** JSON Pointer escaping of one reference token (RFC 6901). */
export function pointerToken(token: string | number): string {
  return String(token).replace(/~/g, "~0").replace(/\//g, "~1");
}
