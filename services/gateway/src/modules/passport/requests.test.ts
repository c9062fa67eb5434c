import { ApiError, type Issue } from "@dpp/contract";
import { passportV1, timestampDate, type Timestamp } from "@dpp/proto";
import {
  createPassportRequest,
  listPassportsRequest,
  publishPassportRequest,
  validatePassportRequest,
} from "./requests";

const refusal = (fn: () => unknown): ApiError => {
  try {
    fn();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error("expected a refusal");
};
const issues = (list: unknown) =>
  (list as Issue[]).map((i) => ["pointer" in i.source ? i.source.pointer : undefined, i.rule]);

describe("createPassportRequest", () => {
  it("takes the members as fields, data as JSON text", () => {
    expect(
      createPassportRequest({
        category: "textile",
        external_id: "SKU-1",
        data: { product_name: "x", note: null },
      }),
    ).toEqual({
      request: { category: "textile", externalId: "SKU-1", dataJson: '{"product_name":"x","note":null}' },
      issues: [],
    });
    expect(createPassportRequest({ category: "general", external_id: null, data: null })).toEqual({
      request: { category: "general", dataJson: "" },
      issues: [],
    });
  });

  it("points at unknown top-level body keys, escaped", () => {
    expect(
      issues(createPassportRequest({ category: "textile", status: "published", "a/b~c": 1 }).issues),
    ).toEqual([
      ["/status", "unknown_field"],
      ["/a~1b~0c", "unknown_field"],
    ]);
  });

  it("requires a category, as a string", () => {
    expect(issues(createPassportRequest({ data: { product_name: "x" } }).issues)).toEqual([
      ["/category", "required"],
    ]);
    expect(issues(createPassportRequest(undefined).issues)).toEqual([["/category", "required"]]);
    expect(issues(createPassportRequest({ category: 7 }).issues)).toEqual([["/category", "type"]]);
    // An empty string is a string: whether it names a category is the service's to say.
    expect(createPassportRequest({ category: "" }).issues).toEqual([]);
  });

  it("lists the shape issues of every member at once, leaving the refused members out of the request", () => {
    const { request, issues: found } = createPassportRequest({
      category: "textile",
      extra: true,
      external_id: 5,
      data: [1],
    });
    expect(issues(found)).toEqual([
      ["/extra", "unknown_field"],
      ["/external_id", "type"],
      ["/data", "type"],
    ]);
    expect(request).toEqual({ category: "textile", dataJson: "" });
  });

  it("refuses a body that is not an object at the root", () => {
    const e = refusal(() => createPassportRequest([{ category: "textile" }]));
    expect(e.code).toBe("validation_failed");
    expect(e.details.issues).toEqual([
      { source: { pointer: "" }, rule: "type", message: "expected an object" },
    ]);
  });
});

describe("listPassportsRequest", () => {
  it("parses the limit, the status and updated_since into typed fields", () => {
    const { request, deferred } = listPassportsRequest({
      limit: "5",
      status: "readonly",
      category: "battery",
      cursor: "c",
      updated_since: "2025-06-01T14:00:00.123456+02:00",
    });
    expect(deferred).toBeUndefined();
    expect(request).toMatchObject({
      limit: 5,
      status: passportV1.PassportStatus.READONLY,
      category: "battery",
      cursor: "c",
    });
    expect(timestampDate(request.updatedSince as Timestamp).toISOString()).toBe("2025-06-01T12:00:00.123Z");
    expect(listPassportsRequest({}).request).toEqual({
      limit: 20,
      cursor: "",
      status: passportV1.PassportStatus.UNSPECIFIED,
      category: "",
    });
  });

  it("refuses the limit, then the status, at once; defers a malformed updated_since", () => {
    expect(refusal(() => listPassportsRequest({ limit: "0", status: "archived" })).details.issues).toEqual([
      { source: { parameter: "limit" }, rule: "range", message: "limit must be between 1 and 100." },
    ]);
    expect(
      refusal(() => listPassportsRequest({ status: "archived", updated_since: "x" })).details.issues,
    ).toEqual([
      {
        source: { parameter: "status" },
        rule: "enum",
        message: "status must be one of draft, published, deactivated, trashed, readonly.",
      },
    ]);
    const { deferred } = listPassportsRequest({
      category: "spaceship",
      updated_since: "2025-02-30T00:00:00Z",
    });
    expect(deferred?.details.issues).toEqual([
      {
        source: { parameter: "updated_since" },
        rule: "rfc3339",
        message: "updated_since must be an RFC 3339 timestamp.",
      },
    ]);
  });

  it("refuses a repeated parameter before parsing any", () => {
    expect(refusal(() => listPassportsRequest({ limit: "0", cursor: ["a", "b"] })).details.issues).toEqual([
      { source: { parameter: "cursor" }, rule: "single_value", message: "cursor may be given once." },
    ]);
  });
});

describe("publish and validate bodies", () => {
  it("accept their one optional field and refuse others", () => {
    expect(publishPassportRequest(undefined)).toEqual({});
    expect(publishPassportRequest({ variant_review_fingerprint: "ab".repeat(32) })).toEqual({
      variantReviewFingerprint: "ab".repeat(32),
    });
    expect(
      issues(
        refusal(() => publishPassportRequest({ variant_review_fingerprint: "xyz", force: true })).details
          .issues as never,
      ),
    ).toEqual([
      ["/variant_review_fingerprint", "pattern"],
      ["/force", "unknown_field"],
    ]);
    expect(validatePassportRequest({ dry_run: true })).toEqual({ dryRun: true });
    expect(validatePassportRequest(undefined)).toEqual({ dryRun: false });
    expect(issues(refusal(() => validatePassportRequest({ dry_run: "yes" })).details.issues)).toEqual([
      ["/dry_run", "type"],
    ]);
  });
});
