import { isUniqueViolation } from "./db";

describe("isUniqueViolation", () => {
  const err = Object.assign(new Error("duplicate key value violates unique constraint"), {
    code: "23505",
    constraint: "passport_gtin_uq",
  });

  it("recognises Postgres 23505, on any or on the named constraint", () => {
    expect(isUniqueViolation(err)).toBe(true);
    expect(isUniqueViolation(err, "passport_gtin_uq")).toBe(true);
    expect(isUniqueViolation(err, "other_uq")).toBe(false);
  });

  it("refuses other errors and non-errors", () => {
    expect(isUniqueViolation(Object.assign(new Error("fk"), { code: "23503" }))).toBe(false);
    expect(isUniqueViolation(new Error("plain"))).toBe(false);
    expect(isUniqueViolation(undefined)).toBe(false);
    expect(isUniqueViolation(null)).toBe(false);
    expect(isUniqueViolation("23505")).toBe(false);
  });
});
