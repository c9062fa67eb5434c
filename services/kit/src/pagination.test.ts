import { ApiError } from "@dpp/contract";
import { DEFAULT_LIMIT, MAX_LIMIT, decodeCursor, encodeCursor, parseLimit } from "./pagination";

function thrown(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error("expected an ApiError");
}

describe("parseLimit", () => {
  it("defaults when absent or empty", () => {
    expect(parseLimit(undefined)).toBe(DEFAULT_LIMIT);
    expect(parseLimit("")).toBe(DEFAULT_LIMIT);
    expect(DEFAULT_LIMIT).toBe(20);
  });

  it("accepts 1..MAX_LIMIT", () => {
    expect(parseLimit("1")).toBe(1);
    expect(parseLimit("42")).toBe(42);
    expect(parseLimit(String(MAX_LIMIT))).toBe(MAX_LIMIT);
    expect(MAX_LIMIT).toBe(100);
  });

  it.each(["0", "101", "1000000", "abc", "1.5", "-1", " 5", "1e2", "0x10", "5 ", "9999999"])(
    "refuses %j as invalid_request on parameter limit",
    (raw) => {
      const err = thrown(() => parseLimit(raw));
      expect(err.code).toBe("invalid_request");
      expect(err.status).toBe(400);
      const issues = err.details.issues as { source: { parameter: string }; rule: string }[];
      expect(issues).toHaveLength(1);
      expect(issues[0]!.source).toEqual({ parameter: "limit" });
      expect(typeof issues[0]!.rule).toBe("string");
    },
  );
});

describe("cursors", () => {
  const filters = { status: "draft", category: "apparel", types: ["passport.created", "passport.updated"] };
  const position = { t: "2026-01-01T00:00:00.000Z", id: "pp_01" };

  const cursorError = (fn: () => unknown) => {
    const err = thrown(fn);
    expect(err.code).toBe("cursor_invalid");
    expect(err.status).toBe(400);
    return err;
  };

  it("round-trips the position for the same list and filters", () => {
    const c = encodeCursor("passports", filters, position);
    expect(c).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor("passports", filters, c)).toEqual(position);
  });

  it("returns undefined when no cursor was sent", () => {
    expect(decodeCursor("passports", filters, undefined)).toBeUndefined();
    expect(decodeCursor("passports", filters, "")).toBeUndefined();
  });

  it("accepts the filters in another key order and an array filter in another order", () => {
    const c = encodeCursor("passports", filters, position);
    const reordered = {
      types: ["passport.updated", "passport.created"],
      category: "apparel",
      status: "draft",
    };
    expect(decodeCursor("passports", reordered, c)).toEqual(position);
  });

  it("treats an undefined filter like null", () => {
    const c = encodeCursor("passports", { status: undefined }, 1);
    expect(decodeCursor("passports", { status: null }, c)).toBe(1);
  });

  it("refuses a cursor of another list", () => {
    const c = encodeCursor("passports", filters, position);
    const err = cursorError(() => decodeCursor("events", filters, c));
    expect(err.details).toEqual({ issues: [{ source: { parameter: "cursor" }, rule: "cursor_list" }] });
  });

  it.each([
    ["a changed value", { ...filters, status: "published" }],
    ["a dropped filter", { status: "draft", category: "apparel" }],
    ["an added filter", { ...filters, updated_since: "2026-01-01" }],
    ["an array filter with one element fewer", { ...filters, types: ["passport.created"] }],
    ["a number instead of a string", { ...filters, status: 1 }],
  ])("refuses a cursor sent with other filters: %s", (_label, other) => {
    const c = encodeCursor("passports", filters, position);
    const err = cursorError(() => decodeCursor("passports", other, c));
    expect(err.details).toEqual({ issues: [{ source: { parameter: "cursor" }, rule: "cursor_filters" }] });
  });

  it("refuses a cursor whose embedded list or filters were rewritten", () => {
    const c = encodeCursor("passports", filters, position);
    const inner = JSON.parse(Buffer.from(c, "base64url").toString("utf8")) as Record<string, unknown>;
    const forgedList = Buffer.from(JSON.stringify({ ...inner, l: "events" })).toString("base64url");
    cursorError(() => decodeCursor("passports", filters, forgedList));
    const forgedFilters = Buffer.from(JSON.stringify({ ...inner, f: "AAAAAAAAAAAAAAAA" })).toString(
      "base64url",
    );
    cursorError(() => decodeCursor("passports", filters, forgedFilters));
    const noPosition = Buffer.from(JSON.stringify({ l: inner.l, f: inner.f })).toString("base64url");
    cursorError(() => decodeCursor("passports", filters, noPosition));
  });

  it("refuses tampered base64 (truncated or altered so it no longer decodes to the cursor)", () => {
    const c = encodeCursor("passports", filters, position);
    cursorError(() => decodeCursor("passports", filters, c.slice(0, c.length - 7)));
    cursorError(() => decodeCursor("passports", filters, c.slice(3)));
    cursorError(() => decodeCursor("passports", filters, `x${c}`));
  });

  it.each([
    ["characters outside base64url", "abc$def"],
    ["standard base64 padding", "eyJsIjoicCJ9=="],
    ["whitespace", "eyJs IjoicCJ9"],
    ["base64url of non-JSON", Buffer.from("hello world").toString("base64url")],
    ["base64url of JSON null", Buffer.from("null").toString("base64url")],
    ["base64url of a JSON string", Buffer.from('"passports"').toString("base64url")],
    ["base64url of a JSON array", Buffer.from("[1,2]").toString("base64url")],
  ])("refuses %s as cursor_invalid", (_label, cursor) => {
    const err = cursorError(() => decodeCursor("passports", filters, cursor));
    const issues = err.details.issues as { source: unknown }[];
    expect(issues[0]!.source).toEqual({ parameter: "cursor" });
  });
});
