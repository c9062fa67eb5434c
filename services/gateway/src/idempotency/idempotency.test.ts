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

  it("stays the fingerprint already recorded for a request (a retry compares with records up to 24 h old)", () => {
    expect(
      fingerprintOf("POST", "/v1/organizations/org_a/passports", {
        category: "textile",
        external_id: "SKU-1",
        data: { product_name: "Shirt", material_composition: [{ percentage: 100, fiber: "cotton" }] },
      }),
    ).toBe("989317bb441e9806b8b0512ff066c5f1f1309fe6ebfc7cbe4ae9319b89bbee00");
    expect(
      fingerprintOf("PATCH", "/v1/organizations/org_a/passports/pp_1", {
        data: { "10": 1, "2": [true, null, -0.5, "é😀\u2028"], __proto__x: {}, "": "" },
      }),
    ).toBe("8fdaacad1d577630fc0153afd3b5db29807c160a9c1019f415a50b578c6f2fb7");
    expect(fingerprintOf("POST", "/v1/organizations/org_a/passports/pp_1/publish", undefined)).toBe(
      "4d47a1df8ab25ea00448e4ea04fa7eda4cfb0cb706ea480d0ec19e74aa0257a8",
    );
  });
});
