import { Writable } from "node:stream";
import * as grpc from "@grpc/grpc-js";
import pino from "pino";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { commonV1, passportV1, rpcStatus } from "@dpp/proto";
import { ApiError, validationFailed } from "@dpp/contract";
import {
  callerNotAuthenticated,
  DETAILS_TRAILER_MAX_BYTES,
  fromServiceError,
  serviceDefinition,
  toServiceError,
} from "./grpc";
import { deadlineRefusal } from "./deadline";

/** What a client sees of a failed call: the status code and the trailers the server sent. */
function asReceived(partial: Partial<grpc.ServiceError>): grpc.ServiceError {
  return Object.assign(new Error(partial.details ?? ""), {
    code: partial.code ?? grpc.status.UNKNOWN,
    details: partial.details ?? "",
    metadata: partial.metadata ?? new grpc.Metadata(),
  });
}

describe("toServiceError / fromServiceError (no network)", () => {
  it("carries code, message, details and headers through the status trailer", () => {
    const err = new ApiError(
      "resource_busy",
      "Another request holds this key.",
      { idempotency_key: "k1", nested: { list: [1, null, "x"], none: null } },
      { "Retry-After": "2" },
    );
    const back = fromServiceError(asReceived(toServiceError(err)), "passport");
    expect(back).toBeInstanceOf(ApiError);
    expect(back.code).toBe("resource_busy");
    expect(back.status).toBe(409);
    expect(back.message).toBe("Another request holds this key.");
    expect(back.details).toEqual({ idempotency_key: "k1", nested: { list: [1, null, "x"], none: null } });
    expect(back.headers).toEqual({ "Retry-After": "2" });
  });

  it.each([
    ["validation_failed", grpc.status.INVALID_ARGUMENT],
    ["invalid_key", grpc.status.UNAUTHENTICATED],
    ["insufficient_scope", grpc.status.PERMISSION_DENIED],
    ["publish_limit_reached", grpc.status.PERMISSION_DENIED],
    ["resource_not_found", grpc.status.NOT_FOUND],
    ["already_exists", grpc.status.ABORTED],
    ["precondition_failed", grpc.status.FAILED_PRECONDITION],
    ["rate_limited", grpc.status.RESOURCE_EXHAUSTED],
    ["storage_unavailable", grpc.status.UNAVAILABLE],
    ["internal_error", grpc.status.INTERNAL],
  ] as const)("maps %s to a fitting gRPC status", (code, grpcCode) => {
    expect(toServiceError(new ApiError(code)).code).toBe(grpcCode);
  });

  it("turns a plain Error into internal_error without its message", () => {
    const se = toServiceError(new Error("password=hunter2 leaked"));
    expect(se.code).toBe(grpc.status.INTERNAL);
    expect(se.details).not.toContain("hunter2");
    const back = fromServiceError(asReceived(se), "passport");
    expect(back.code).toBe("internal_error");
    expect(back.message).not.toContain("hunter2");
    expect(JSON.stringify(back.details)).not.toContain("hunter2");
  });

  it("answers a lost database connection as internal_error database_unavailable with Retry-After", () => {
    const lost = Object.assign(new Error("Connection terminated unexpectedly"), {});
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
    const shutdown = Object.assign(new Error("terminating connection due to administrator command"), {
      code: "57P01",
    });
    for (const err of [lost, refused, shutdown]) {
      const back = fromServiceError(asReceived(toServiceError(err)), "passport");
      expect([back.code, back.details, back.headers]).toEqual([
        "internal_error",
        { reason: "database_unavailable" },
        { "Retry-After": "1" },
      ]);
    }
    // A query the database refused is not a lost connection.
    const refusedQuery = Object.assign(new Error("duplicate key"), { code: "23505" });
    expect(fromServiceError(asReceived(toServiceError(refusedQuery)), "passport").headers).toEqual({});
  });

  it("carries the headers in the declared field of the packed ApiError, never in its details", () => {
    const se = toServiceError(
      new ApiError("rate_limited", undefined, { limit: 5 }, { "Retry-After": "9", Allow: "GET, HEAD" }),
    );
    const status = fromBinary(
      rpcStatus.StatusSchema,
      se.metadata!.get("grpc-status-details-bin")[0] as Buffer,
    );
    const packed = anyUnpack(status.details[0]!, commonV1.ApiErrorSchema)!;
    expect(packed.headers).toEqual({ "Retry-After": "9", Allow: "GET, HEAD" });
    expect(JSON.parse(packed.detailsJson)).toEqual({ limit: 5 });

    const back = fromServiceError(asReceived(se), "gateway");
    expect(back.details).toEqual({ limit: 5 });
    expect(back.headers).toEqual({ "Retry-After": "9", Allow: "GET, HEAD" });
  });

  it("keeps every member of the details as details, whatever its name", () => {
    const details = { __headers: { "Retry-After": "1" }, headers: "x" };
    const back = fromServiceError(
      asReceived(toServiceError(new ApiError("validation_failed", undefined, details))),
      "passport",
    );
    expect(back.details).toEqual(details);
    expect(back.headers).toEqual({});
  });

  it("maps transport failures without a trailer to internal_error with a reason", () => {
    const unavailable = fromServiceError(asReceived({ code: grpc.status.UNAVAILABLE }), "passport");
    expect(unavailable.code).toBe("internal_error");
    expect(unavailable.details).toEqual({ reason: "upstream_unavailable", service: "passport" });
    expect(unavailable.headers["Retry-After"]).toBeDefined();

    // No answer within the deadline and its grace, or a connection lost in flight: the outcome is unknown.
    const timeout = fromServiceError(asReceived({ code: grpc.status.DEADLINE_EXCEEDED }), "passport");
    expect(timeout.details).toEqual({ reason: "outcome_unknown", service: "passport" });
    const dropped = fromServiceError(
      asReceived({ code: grpc.status.UNAVAILABLE, details: "Connection dropped" }),
      "passport",
    );
    expect(dropped.details).toEqual({ reason: "outcome_unknown", service: "passport" });

    // The service's own answer that it gave up at its deadline: nothing applied, and the service named.
    const gaveUp = fromServiceError(asReceived(toServiceError(deadlineRefusal())), "passport");
    expect(gaveUp.details).toEqual({ reason: "upstream_timeout", service: "passport" });

    const other = fromServiceError(asReceived({ code: grpc.status.UNIMPLEMENTED }), "events");
    expect(other.code).toBe("internal_error");
    expect(other.details).toEqual({ reason: "upstream_error", service: "events" });
  });

  it("treats an undecodable trailer as an internal error", () => {
    const md = new grpc.Metadata();
    md.set("grpc-status-details-bin", Buffer.from([0xff, 0x00, 0x13, 0x37]));
    const back = fromServiceError(asReceived({ code: grpc.status.ABORTED, metadata: md }), "passport");
    expect(back.code).toBe("internal_error");
  });

  it("bounds every refusal it packs: a 200,000-character member name comes back cut, in a small trailer", () => {
    const name = "m".repeat(200_000);
    const issues = [
      { source: { pointer: `/data/${name}` }, rule: "unknown_field", message: `Unknown field "${name}".` },
    ];
    const se = toServiceError(validationFailed(issues));
    expect(se.detailsMessage).toBeUndefined();
    const trailer = se.metadata!.get("grpc-status-details-bin")[0] as Buffer;
    expect(trailer.length).toBeLessThanOrEqual(DETAILS_TRAILER_MAX_BYTES);
    expect(se.details!.length).toBeLessThan(300);
    const back = fromServiceError(asReceived(se), "passport");
    const cut = `${"m".repeat(200)}\u2026`;
    expect(back.details.issues).toEqual([
      {
        source: { pointer: `/data/${cut}` },
        rule: "unknown_field",
        message: `Unknown field "${cut}".`,
        pointer_truncated: true,
      },
    ]);
    expect(back.message).toBe(`The request body failed validation (1 issue at /data/${cut}).`);
  });

  it("lists the first 100 issues of a refusal and counts them all", () => {
    const issues = Array.from({ length: 400 }, (_, i) => ({ source: { pointer: `/data/f${i}` }, rule: "x" }));
    const back = fromServiceError(asReceived(toServiceError(validationFailed(issues))), "passport");
    expect(back.details.issues).toEqual(issues.slice(0, 100));
    expect([back.details.issues_truncated, back.details.total_issues]).toEqual([true, 400]);
  });

  it("sends details over the trailer bound as a message, the trailer keeping the error without its details", () => {
    const rows = Array.from({ length: 200 }, (_, i) => ({ row: i, reason: "r".repeat(80) }));
    const se = toServiceError(
      new ApiError("invalid_request", "Too many rows.", { rows }, { "Retry-After": "3" }),
    );
    expect(se.detailsMessage![0]).toBe(0);
    const full = rpcStatus.StatusSchema;
    const packed = (bytes: Uint8Array) =>
      anyUnpack(fromBinary(full, bytes).details[0]!, commonV1.ApiErrorSchema)!;
    expect(JSON.parse(packed(se.detailsMessage!.subarray(1)).detailsJson)).toEqual({ rows });
    const trailer = packed(se.metadata!.get("grpc-status-details-bin")[0] as Buffer);
    expect([trailer.code, trailer.message, trailer.detailsJson, trailer.headers]).toEqual([
      "invalid_request",
      "Too many rows.",
      "{}",
      { "Retry-After": "3" },
    ]);
  });

  it("lets a service name the gRPC status explicitly", () => {
    expect(
      toServiceError(new ApiError("configuration_error"), undefined, grpc.status.UNAUTHENTICATED).code,
    ).toBe(grpc.status.UNAUTHENTICATED);
  });
});

describe("a call refused for not proving its caller", () => {
  function capture() {
    const lines: Array<Record<string, unknown>> = [];
    const stream = new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    return { lines, log: pino({ level: "info" }, stream) };
  }

  it("is UNAUTHENTICATED with configuration_error packed in, never a key error", () => {
    const se = callerNotAuthenticated("expired");
    expect(se.code).toBe(grpc.status.UNAUTHENTICATED);
    const packed = fromServiceError(asReceived({ ...se, code: grpc.status.INTERNAL }), "passport");
    expect(packed.code).toBe("configuration_error");
    expect(packed.details).toEqual({ reason: "caller_not_authenticated", check: "expired" });
  });

  it("reaches the API client as internal_error upstream_rejected_caller; the service's reason is only logged", async () => {
    const { lines, log } = capture();
    const back = fromServiceError(asReceived(callerNotAuthenticated("untrusted_issuer")), "passport", log);
    expect(back.code).toBe("internal_error");
    expect(back.status).toBe(500);
    expect(back.details).toEqual({ reason: "upstream_rejected_caller", service: "passport" });
    expect(back.headers).toEqual({});
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 50, service: "passport", check: "untrusted_issuer" });
  });

  it("treats a bare UNAUTHENTICATED (no packed error, e.g. a proxy) the same way", () => {
    const back = fromServiceError(asReceived({ code: grpc.status.UNAUTHENTICATED }), "events");
    expect(back.code).toBe("internal_error");
    expect(back.details).toEqual({ reason: "upstream_rejected_caller", service: "events" });
  });

  it("passes a packed key error through unchanged", () => {
    const back = fromServiceError(asReceived(toServiceError(new ApiError("invalid_key"))), "passport");
    expect(back.code).toBe("invalid_key");
  });
});

describe("a service's answers on the wire (no network)", () => {
  const getPassport = serviceDefinition(passportV1.PassportService as never).getPassport!;
  const answer = { passport: { id: "pp_1", organizationId: "org_a", category: "textile", version: 3 } };

  it("encodes a message the handler answers", () => {
    const sent = getPassport.responseSerialize(answer);
    expect(fromBinary(passportV1.GetPassportResponseSchema, sent).passport?.version).toBe(3);
  });

  it("sends an answer already encoded (a keyed call's, as recorded) as it is, byte for byte", () => {
    const recorded = toBinary(
      passportV1.GetPassportResponseSchema,
      create(passportV1.GetPassportResponseSchema, answer),
    );
    const sent = getPassport.responseSerialize(recorded);
    expect(Buffer.compare(sent, Buffer.from(recorded))).toBe(0);
  });
});
