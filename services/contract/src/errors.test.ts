import {
  ApiError,
  boundError,
  DOCUMENTATION_BASE_URL,
  ERROR_LIMITS,
  ERROR_TABLE,
  httpStatusOf,
  invalidParameter,
  isErrorCode,
  pointerToken,
  toEnvelope,
  validationFailed,
  type ErrorCode,
  type Issue,
} from "./errors";

// The HTTP status of every code in the "Codes" table of the API spec (dpp-api-v1.md).
// cursor_invalid's status is "not shown" there; we chose 400 (a malformed query value).
const SPEC_STATUS: Record<string, number> = {
  invalid_key: 401,
  key_revoked: 401,
  key_expired: 401,
  key_rotated: 401,
  mode_mismatch: 400,
  insufficient_scope: 403,
  organization_not_found_or_not_granted: 404,
  resource_not_found: 404,
  wildcard_not_supported: 400,
  invalid_request: 400,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  validation_failed: 422,
  idempotency_conflict: 409,
  already_exists: 409,
  gtin_in_use: 409,
  variant_limit_reached: 422,
  variant_review_required: 409,
  variant_review_changed: 409,
  precondition_failed: 412,
  resource_busy: 409,
  gtin_required: 422,
  not_trashed: 409,
  wrong_status: 409,
  publish_limit_reached: 402,
  unit_limit_reached: 402,
  document_missing: 422,
  document_feeds_extraction: 409,
  document_feeds_reading: 409,
  invalid_input: 400,
  invalid_observed_on: 400,
  invalid_source: 400,
  invalid_field: 400,
  invalid_note: 400,
  invalid_value: 400,
  invalid_document_id: 400,
  unit_status_required: 400,
  unit_status_transition_forbidden: 409,
  unit_status_history_conflict: 409,
  unit_status_not_allowed: 422,
  unit_reading_document_unavailable: 400,
  delegation_required: 403,
  attestation_required: 403,
  test_mode_refused: 403,
  human_approval_required: 202,
  connector_writes_drafts_only: 409,
  proposal_requires_assistant: 403,
  no_changes: 422,
  portal_unavailable: 502,
  storage_unavailable: 503,
  entitlement_unavailable: 503,
  no_subscription: 402,
  payment_overdue: 402,
  plan_required: 402,
  rate_limited: 429,
  grant_conflict: 409,
  grantor_not_seated: 403,
  france_mandate_required: 403,
  key_not_grantable: 409,
  scope_exceeds_key: 422,
  configuration_error: 500,
  internal_error: 500,
  cursor_invalid: 400,
};

describe("ERROR_TABLE", () => {
  it.each(Object.entries(ERROR_TABLE))("%s has a 3-digit HTTP status and a sentence", (_code, entry) => {
    expect(Number.isInteger(entry.status)).toBe(true);
    expect(entry.status).toBeGreaterThanOrEqual(100);
    expect(entry.status).toBeLessThanOrEqual(599);
    expect(entry.message.trim().length).toBeGreaterThan(0);
  });

  it.each(Object.entries(SPEC_STATUS))("spec code %s maps to HTTP %i", (code, status) => {
    expect(isErrorCode(code)).toBe(true);
    expect(httpStatusOf(code as ErrorCode)).toBe(status);
  });

  it("isErrorCode refuses unknown codes and inherited object keys", () => {
    expect(isErrorCode("no_such_code")).toBe(false);
    expect(isErrorCode("toString")).toBe(false);
    expect(isErrorCode("__proto__")).toBe(false);
    expect(isErrorCode("rate_limited")).toBe(true);
  });
});

describe("ApiError", () => {
  it("defaults its message from the table and derives its status from its code", () => {
    const err = new ApiError("precondition_failed");
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe("ApiError");
    expect(err.code).toBe("precondition_failed");
    expect(err.status).toBe(412);
    expect(err.message).toBe(ERROR_TABLE.precondition_failed.message);
    expect(err.details).toEqual({});
    expect(err.headers).toEqual({});
  });

  it("keeps a custom message, details and headers", () => {
    const err = new ApiError("rate_limited", "Slow down.", { limit: 60 }, { "Retry-After": "7" });
    expect(err.status).toBe(429);
    expect(err.message).toBe("Slow down.");
    expect(err.details).toEqual({ limit: 60 });
    expect(err.headers).toEqual({ "Retry-After": "7" });
  });
});

describe("toEnvelope", () => {
  it("builds exactly {error: {code, message, documentation_url, request_id, details}}", () => {
    const err = new ApiError("payload_too_large", undefined, { limit_bytes: 1048576 });
    const env = toEnvelope(err, "req_123");
    expect(env).toStrictEqual({
      error: {
        code: "payload_too_large",
        message: ERROR_TABLE.payload_too_large.message,
        documentation_url: `${DOCUMENTATION_BASE_URL}#payload_too_large`,
        request_id: "req_123",
        details: { limit_bytes: 1048576 },
      },
    });
    expect(Object.keys(env)).toEqual(["error"]);
    expect(Object.keys(env.error).sort()).toEqual(
      ["code", "details", "documentation_url", "message", "request_id"].sort(),
    );
  });

  it("never puts response headers into the body and always has a details object", () => {
    const env = toEnvelope(
      new ApiError("resource_busy", undefined, undefined, { "Retry-After": "1" }),
      "req_x",
    );
    expect(env.error.details).toEqual({});
    expect(JSON.stringify(env)).not.toContain("Retry-After");
  });

  it("uses the given documentation base", () => {
    const env = toEnvelope(new ApiError("cursor_invalid"), "req_1", "https://example.test/docs");
    expect(env.error.documentation_url).toBe("https://example.test/docs#cursor_invalid");
  });
});

describe("validationFailed", () => {
  it("is a 422 validation_failed carrying details.issues", () => {
    const issues: Issue[] = [
      { source: { pointer: "/data/weight" }, rule: "type", message: "must be a number" },
      { source: { pointer: "/category" }, rule: "required" },
    ];
    const err = validationFailed(issues);
    expect(err.code).toBe("validation_failed");
    expect(err.status).toBe(422);
    expect(err.details).toEqual({ issues });
    expect(err.message).toContain("2 issues");
    expect(err.message).toContain("/data/weight");
  });

  it("names the root pointer as / and counts one issue in the singular", () => {
    const err = validationFailed([{ source: { pointer: "" }, rule: "type" }]);
    expect(err.message).toContain("1 issue ");
    expect(err.message).toContain("at /");
  });

  it("keeps a custom message", () => {
    expect(validationFailed([], "Nope.").message).toBe("Nope.");
  });

  it("counts the issues found when it lists only the first of them", () => {
    const issues: Issue[] = [{ source: { pointer: "/a" }, rule: "nul_character" }];
    const err = validationFailed(issues, undefined, 150);
    expect(err.details).toEqual({ issues, issues_truncated: true, total_issues: 150 });
    expect(err.message).toBe("The request body failed validation (150 issues, the first at /a).");
  });
});

describe("invalidParameter", () => {
  it("is invalid_request with one parameter issue", () => {
    const err = invalidParameter("limit", "range", "limit must be between 1 and 100.");
    expect(err.code).toBe("invalid_request");
    expect(err.status).toBe(400);
    expect(err.details).toEqual({
      issues: [
        { source: { parameter: "limit" }, rule: "range", message: "limit must be between 1 and 100." },
      ],
    });
  });
});

describe("pointerToken", () => {
  it.each([
    ["plain", "plain"],
    ["a/b", "a~1b"],
    ["m~n", "m~0n"],
    ["~1", "~01"],
    ["/~/", "~1~0~1"],
    ["", ""],
  ])("escapes %j as %j (RFC 6901)", (token, escaped) => {
    expect(pointerToken(token)).toBe(escaped);
  });

  it("turns array indexes into tokens", () => {
    expect(`/variants/${pointerToken(3)}/size`).toBe("/variants/3/size");
  });
});

describe("boundError", () => {
  const unknownField = (name: string): Issue => ({
    source: { pointer: `/data/${pointerToken(name)}` },
    rule: "unknown_field",
    message: `Unknown field "${name}": the textile field schema does not define it.`,
  });

  it("cuts a long member name to 200 characters and an ellipsis in the pointer and in every message, and says so", () => {
    const name = "m".repeat(200_000);
    const err = boundError(validationFailed([unknownField(name)]));
    const cut = `${"m".repeat(200)}\u2026`;
    expect(err.code).toBe("validation_failed");
    expect(err.details.issues).toEqual([
      {
        source: { pointer: `/data/${cut}` },
        rule: "unknown_field",
        message: `Unknown field "${cut}": the textile field schema does not define it.`,
        pointer_truncated: true,
      },
    ]);
    expect(err.message).toBe(`The request body failed validation (1 issue at /data/${cut}).`);
    expect(JSON.stringify(toEnvelope(err, "req_1")).length).toBeLessThan(1000);
  });

  it("cuts names by characters, never inside a surrogate pair, and keeps their escaping", () => {
    const name = `a/${"😀".repeat(300)}`;
    const err = boundError(validationFailed([unknownField(name)]));
    const issue = (err.details.issues as Record<string, any>[])[0]!;
    expect(issue.source.pointer).toBe(`/data/a~1${"😀".repeat(198)}\u2026`);
    expect(issue.message).toContain(`"a/${"😀".repeat(198)}\u2026"`);
    expect(issue.pointer_truncated).toBe(true);
  });

  it("lists the first 100 issues and counts them all", () => {
    const issues = Array.from({ length: 400 }, (_, i) => unknownField(`field_${i}`));
    const err = boundError(validationFailed(issues));
    expect(err.details.issues).toEqual(issues.slice(0, ERROR_LIMITS.issues));
    expect(err.details.issues_truncated).toBe(true);
    expect(err.details.total_issues).toBe(400);
    expect(err.message).toBe("The request body failed validation (400 issues, the first at /data/field_0).");
  });

  it("cuts a deep pointer of long names at a token boundary to at most 1000 characters", () => {
    const pointer = Array.from({ length: 32 }, (_, i) => `/${String(i).repeat(300)}`).join("");
    const err = boundError(validationFailed([{ source: { pointer }, rule: "nul_character" }]));
    const cut = (err.details.issues as Record<string, any>[])[0]!.source.pointer as string;
    expect(cut.length).toBeLessThanOrEqual(ERROR_LIMITS.pointerChars);
    expect(cut.startsWith(`/${"0".repeat(200)}\u2026/${"1".repeat(200)}\u2026/`)).toBe(true);
    expect(cut.endsWith("/\u2026")).toBe(true);
  });

  it("cuts any other long text of the message or the details, with its length", () => {
    const value = "v".repeat(50_000);
    const err = boundError(
      new ApiError("invalid_request", `The value ${value} is refused.`, {
        issues: [{ source: { parameter: "q" }, rule: "unit", message: `not ${value}` }],
        path: `/${value}`,
      }),
    );
    expect(err.message.length).toBeLessThanOrEqual(ERROR_LIMITS.textChars);
    expect(err.message).toMatch(/^The value v+\u2026 \(cut from 50022 characters\)$/);
    expect((err.details.path as string).length).toBeLessThanOrEqual(ERROR_LIMITS.textChars);
    const issue = (err.details.issues as Record<string, any>[])[0]!;
    expect(issue.message).toMatch(/^not v+\u2026 \(cut from 50004 characters\)$/);
    expect(issue.source).toEqual({ parameter: "q" });
    expect(issue.pointer_truncated).toBeUndefined();
  });

  it("returns an error within the bounds as it is, and changes nothing when applied again", () => {
    const small = validationFailed([unknownField("colour")], undefined);
    expect(boundError(small)).toBe(small);
    const once = boundError(
      validationFailed(Array.from({ length: 150 }, (_, i) => unknownField(`${i}${"x".repeat(500)}`))),
    );
    expect(boundError(once)).toBe(once);
  });

  it("keeps the code, the headers and the replayed request id", () => {
    const err = new ApiError("resource_busy", "x".repeat(5000), {}, { "Retry-After": "2" });
    err.replayedRequestId = "req_first";
    const bounded = boundError(err);
    expect([bounded.code, bounded.headers, bounded.replayedRequestId]).toEqual([
      "resource_busy",
      { "Retry-After": "2" },
      "req_first",
    ]);
  });

  it("is applied by toEnvelope", () => {
    const env = toEnvelope(validationFailed([unknownField("n".repeat(10_000))]), "req_1");
    expect((env.error.details.issues as Record<string, any>[])[0]!.source.pointer).toBe(
      `/data/${"n".repeat(200)}\u2026`,
    );
  });
});
