import { ApiError } from "@dpp/contract";
import { canonicalJson, fingerprintOf, readIdempotencyKey } from "./idempotency";

describe("Idempotency-Key syntax", () => {
  it("accepts 1 to 255 printable ASCII characters, sent once", () => {
    expect(readIdempotencyKey(undefined)).toBeUndefined();
    expect(readIdempotencyKey("a")).toBe("a");
    expect(readIdempotencyKey("order 42/~!")).toBe("order 42/~!");
    expect(readIdempotencyKey("x".repeat(255))).toHaveLength(255);
  });
  it.each([[""], ["x".repeat(256)], ["caf\u00e9"], ["tab\there"], [["a", "b"]]])(
    "refuses %j with invalid_request",
    (v) => {
      let err: unknown;
      try {
        readIdempotencyKey(v as string);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe("invalid_request");
      expect((err as ApiError).details.issues).toEqual([
        expect.objectContaining({ source: { header: "Idempotency-Key" } }),
      ]);
    },
  );
});

describe("fingerprint", () => {
  it("covers method, path and body, ignoring key order", () => {
    const a = fingerprintOf("POST", "/v1/organizations/o/passports", { a: 1, b: [1, { y: 2, x: 1 }] });
    expect(fingerprintOf("POST", "/v1/organizations/o/passports", { b: [1, { x: 1, y: 2 }], a: 1 })).toBe(a);
    expect(
      fingerprintOf("PATCH", "/v1/organizations/o/passports", { a: 1, b: [1, { y: 2, x: 1 }] }),
    ).not.toBe(a);
    expect(
      fingerprintOf("POST", "/v1/organizations/o2/passports", { a: 1, b: [1, { y: 2, x: 1 }] }),
    ).not.toBe(a);
    expect(fingerprintOf("POST", "/v1/organizations/o/passports", { a: 2, b: [1, { y: 2, x: 1 }] })).not.toBe(
      a,
    );
    expect(fingerprintOf("POST", "/p", undefined)).not.toBe(fingerprintOf("POST", "/p", {}));
    expect(canonicalJson({ b: null, a: "x" })).toBe('{"a":"x","b":null}');
  });
});
