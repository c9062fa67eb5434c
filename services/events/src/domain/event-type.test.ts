import { ApiError } from "@dpp/contract";
import { isEventType, MAX_TYPE_FILTERS, normalizeTypeFilter } from "./event-type";

describe("isEventType", () => {
  it.each([
    "passport.created",
    "passport.published",
    "variant_unit.status_changed",
    "a.b.c",
    "unit2.created",
  ])("accepts %j", (t) => expect(isEventType(t)).toBe(true));
  it.each([
    "",
    "passport",
    "Passport.created",
    "passport.",
    ".created",
    "passport..created",
    "passport created",
    "2fa.enabled",
    7,
    null,
  ])("refuses %j", (t) => expect(isEventType(t)).toBe(false));
  it("refuses overlong types", () => {
    expect(isEventType(`a.${"b".repeat(100)}`)).toBe(false);
  });
});

describe("normalizeTypeFilter", () => {
  it("de-duplicates and sorts", () => {
    expect(normalizeTypeFilter(["passport.updated", "passport.created", "passport.updated"])).toEqual([
      "passport.created",
      "passport.updated",
    ]);
    expect(normalizeTypeFilter([])).toEqual([]);
  });

  it("refuses a malformed type as invalid_request on parameter type", () => {
    let err: unknown;
    try {
      normalizeTypeFilter(["passport.created", "Passport"]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({
      code: "invalid_request",
      details: { issues: [{ source: { parameter: "type" }, rule: "event_type" }] },
    });
  });

  it("refuses too many distinct types", () => {
    const many = Array.from({ length: MAX_TYPE_FILTERS + 1 }, (_, i) => `resource${i}.created`);
    expect(() => normalizeTypeFilter(many)).toThrow(expect.objectContaining({ code: "invalid_request" }));
    expect(normalizeTypeFilter([...many.slice(0, MAX_TYPE_FILTERS), many[0]!])).toHaveLength(
      MAX_TYPE_FILTERS,
    );
  });
});
