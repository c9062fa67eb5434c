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
  document_limit_reached: { status: 402, message: "All documents of the plan are used." },
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

/**
 * validation_failed with details.issues (JSON Pointers into the body). `total`: the issues found when `issues`
 * lists only the first of them (then details.issues_truncated and total_issues).
 */
export function validationFailed(issues: Issue[], message?: string, total = issues.length): ApiError {
  const first = issues[0];
  const at = first && "pointer" in first.source ? first.source.pointer || "/" : undefined;
  const where = at === undefined ? "" : total === 1 ? ` at ${at}` : `, the first at ${at}`;
  return new ApiError(
    "validation_failed",
    message ?? `The request body failed validation (${total} issue${total === 1 ? "" : "s"}${where}).`,
    total > issues.length ? { issues, issues_truncated: true, total_issues: total } : { issues },
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

/** The envelope of `err`, its message and details bounded (boundError). */
export function toEnvelope(
  err: ApiError,
  requestId: string,
  documentationBase = DOCUMENTATION_BASE_URL,
): ErrorEnvelope {
  err = boundError(err);
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

// ---- bounds of an error answer ------------------------------------------------------------------------------

/**
 * The bounds of every error answer (docs/decisions/0046). An error echoes what the request sent (a member name
 * in a pointer and in a message, a value in a message, a path), so without them its size would follow the
 * request's: a 200,000-character member name would come back three times over. boundError applies them where
 * every error passes: the kit packs every service's refusal through it, and toEnvelope every answer.
 */
export const ERROR_LIMITS = {
  /** Characters of one reference token of a pointer (a member name): a longer one keeps these and ends with "…". */
  pointerTokenChars: 200,
  /** Characters of a whole pointer once its tokens are cut: a longer one ends with a "…" token where it is cut. */
  pointerChars: 1000,
  /** Issues listed in details.issues (the first ones); beyond, details.issues_truncated and total_issues. */
  issues: 100,
  /** Characters of any other text of an error (its message, an issue's message, a text of its details). */
  textChars: 1000,
} as const;

const ELLIPSIS = "\u2026";

const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** The index in `s` after its first `n` code points (s.length when it has no more). */
function codePointIndex(s: string, n: number): number {
  let i = 0;
  for (let k = 0; k < n && i < s.length; k++)
    i += isHighSurrogate(s.charCodeAt(i)) && isLowSurrogate(s.charCodeAt(i + 1)) ? 2 : 1;
  return i;
}

function codePointCount(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; n++)
    i += isHighSurrogate(s.charCodeAt(i)) && isLowSurrogate(s.charCodeAt(i + 1)) ? 2 : 1;
  return n;
}

/** A member name of more than pointerTokenChars characters, cut to them and "…"; undefined when it is not longer. */
function cutName(name: string): string | undefined {
  if (name.length <= ERROR_LIMITS.pointerTokenChars) return undefined;
  const end = codePointIndex(name, ERROR_LIMITS.pointerTokenChars);
  const short = name.slice(0, end) + ELLIPSIS;
  // A name cut once (its characters and the ellipsis) is not cut again.
  return end < name.length && short !== name ? short : undefined;
}

/**
 * A text of more than textChars characters, cut so that it has at most textChars with a note saying how long it
 * was; undefined when it is not longer (a text cut once is not cut again).
 */
function cutText(text: string): string | undefined {
  if (text.length <= ERROR_LIMITS.textChars) return undefined;
  const note = `${ELLIPSIS} (cut from ${codePointCount(text)} characters)`;
  let end = ERROR_LIMITS.textChars - note.length;
  if (isLowSurrogate(text.charCodeAt(end)) && isHighSurrogate(text.charCodeAt(end - 1))) end--;
  return text.slice(0, end) + note;
}

const unescapeToken = (token: string) =>
  token.indexOf("~") < 0 ? token : token.replace(/~1/g, "/").replace(/~0/g, "~");

/**
 * A pointer with each token longer than pointerTokenChars cut (the names cut are added to `cutNames`, name → cut
 * name, escaped and not), then cut to pointerChars at a token boundary; undefined when nothing was cut.
 */
function cutPointer(pointer: string, cutNames: Map<string, string>): string | undefined {
  if (pointer.length <= ERROR_LIMITS.pointerTokenChars) return undefined;
  const tokens = pointer.split("/");
  let cut = false;
  for (let i = 0; i < tokens.length; i++) {
    const name = unescapeToken(tokens[i]!);
    const short = cutName(name);
    if (short === undefined) continue;
    cut = true;
    const escaped = pointerToken(short);
    cutNames.set(name, short);
    cutNames.set(tokens[i]!, escaped);
    tokens[i] = escaped;
  }
  let out = tokens.join("/");
  if (out.length > ERROR_LIMITS.pointerChars) {
    cut = true;
    let end = 0;
    for (let i = 0; i < tokens.length; i++) {
      const next = end + (i === 0 ? 0 : 1) + tokens[i]!.length;
      if (next > ERROR_LIMITS.pointerChars - 2) break;
      end = next;
    }
    out = `${out.slice(0, end)}/${ELLIPSIS}`;
  }
  return cut ? out : undefined;
}

/** `text` with every long name of `cutNames` replaced by its cut form (longest first), then cut if still too long. */
function boundText(text: string, cutNames: Map<string, string>): string {
  let out = text;
  if (cutNames.size > 0) {
    const names = cutNames.size === 1 ? cutNames : [...cutNames].sort((a, b) => b[0].length - a[0].length);
    for (const [name, short] of names) if (out.includes(name)) out = out.split(name).join(short);
  }
  return cutText(out) ?? out;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * `value` with every text bounded: a pointer (a member named `pointer`) by cutPointer, adding the names it cuts to
 * `cutNames`, any other text by boundText. The same value when nothing changed.
 */
function boundValue(value: unknown, cutNames: Map<string, string>, key?: string): unknown {
  if (typeof value === "string")
    return key === "pointer" ? (cutPointer(value, cutNames) ?? value) : boundText(value, cutNames);
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const b = boundValue(value[i], cutNames);
      if (b !== value[i]) (out ??= value.slice())[i] = b;
    }
    return out ?? value;
  }
  if (isPlainObject(value)) {
    let out: Record<string, unknown> | undefined;
    for (const k in value) {
      const v = value[k];
      const b = boundValue(v, cutNames, k);
      if (b !== v) (out ??= { ...value })[k] = b;
    }
    return out ?? value;
  }
  return value;
}

/**
 * One issue bounded: its source first (a pointer's long names are cut, and `pointer_truncated: true` is added),
 * then its other members, where the names its pointer cut are cut the same way. Those names are added to
 * `cutNames`.
 */
function boundIssue(issue: unknown, cutNames: Map<string, string>): unknown {
  if (!isPlainObject(issue)) return boundValue(issue, cutNames);
  const own = new Map<string, string>();
  const source = boundValue(issue.source, own);
  let out: Record<string, unknown> | undefined = source === issue.source ? undefined : { ...issue, source };
  for (const k in issue) {
    if (k === "source") continue;
    const v = issue[k];
    const b = boundValue(v, own, k);
    if (b !== v) (out ??= { ...issue, source })[k] = b;
  }
  for (const [name, short] of own) cutNames.set(name, short);
  if (!out) return issue;
  const before = isPlainObject(issue.source) ? issue.source.pointer : undefined;
  if (isPlainObject(source) && source.pointer !== before) out.pointer_truncated = true;
  return out;
}

/**
 * `err` within ERROR_LIMITS: the first `issues` issues of details.issues (then `issues_truncated: true` and
 * `total_issues`, the number of issues found), each pointer's long member names cut to their first characters
 * and "…" (then `pointer_truncated: true` on the issue) and cut the same way where a message repeats them, and
 * every other text of the message and the details cut with a note of its length. The same error when it is
 * within them; applying it again changes nothing.
 */
export function boundError(err: ApiError): ApiError {
  const details = err.details;
  const cutNames = new Map<string, string>();
  let changed = false;
  const out: ErrorDetails = {};
  const all = details.issues;
  if (Array.isArray(all)) {
    const listed = all.length > ERROR_LIMITS.issues ? all.slice(0, ERROR_LIMITS.issues) : all;
    let issues: unknown[] | undefined = listed === all ? undefined : listed;
    for (let i = 0; i < listed.length; i++) {
      const b = boundIssue(listed[i], cutNames);
      if (b !== listed[i]) (issues ??= listed.slice())[i] = b;
    }
    out.issues = issues ?? all;
    changed = issues !== undefined;
  }
  for (const k in details) {
    if (k === "issues" && Array.isArray(all)) continue;
    const v = details[k];
    const b = boundValue(v, cutNames, k);
    out[k] = b;
    if (b !== v) changed = true;
  }
  if (Array.isArray(all) && all.length > ERROR_LIMITS.issues) {
    out.issues_truncated = true;
    out.total_issues = details.total_issues ?? all.length;
  }
  const message = boundText(err.message, cutNames);
  if (!changed && message === err.message) return err;
  const bounded = new ApiError(err.code, message, out, err.headers);
  if (err.replayedRequestId !== undefined) bounded.replayedRequestId = err.replayedRequestId;
  return bounded;
}

/** One offending item of a refusal the client can correct: where it is in the body and which rule it broke. */
export interface OffendingItem {
  /** JSON Pointer into the request body, e.g. `/variants/3/gtin`. */
  pointer: string;
  rule: string;
  message?: string;
}

/**
 * A refusal the client corrects item by item (a batch refused whole): `details.issues` holds a pointer per
 * offending item, beside the code's own details (`gtin_in_use`'s passport, `already_exists`'s conflicts, ...).
 */
export function correctableRefusal(
  code: ErrorCode,
  message: string,
  items: OffendingItem[],
  details: ErrorDetails = {},
): ApiError {
  return new ApiError(code, message, {
    ...details,
    issues: items.map((i) => ({
      source: { pointer: i.pointer },
      rule: i.rule,
      ...(i.message ? { message: i.message } : {}),
    })),
  });
}
