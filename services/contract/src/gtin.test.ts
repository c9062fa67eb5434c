import { gtinCheckDigit, hasGtinShape, normalizeGtin } from "./gtin";

describe("normalizeGtin", () => {
  it.each([
    ["4006381333931", "04006381333931"], // GTIN-13
    ["96385074", "00000096385074"], // GTIN-8
    ["036000291452", "00036000291452"], // GTIN-12 (UPC-A)
    ["10614141000415", "10614141000415"], // GTIN-14
  ])("accepts %s as %s", (input, expected) => {
    expect(normalizeGtin(input)).toBe(expected);
  });

  it("is idempotent on its own output", () => {
    expect(normalizeGtin("04006381333931")).toBe("04006381333931");
  });

  it.each(["4006381333932", "96385075", "036000291453", "10614141000416", "4006381333930"])(
    "rejects an altered check digit: %s",
    (input) => {
      expect(normalizeGtin(input)).toBeNull();
    },
  );

  it.each([
    "40063813339a1",
    "4006381333931 ",
    " 4006381333931",
    "4006-381333931",
    "",
    "０４００６３８１３３３９３１",
  ])("rejects non-digits: %j", (input) => {
    expect(normalizeGtin(input)).toBeNull();
  });

  it.each(["123456789", "1234567890", "12345678901", "1234567", "123456789012345"])(
    "rejects %s (wrong length)",
    (input) => {
      expect(normalizeGtin(input)).toBeNull();
    },
  );

  it("rejects an all-zero GTIN", () => {
    expect(normalizeGtin("00000000")).toBeNull();
    expect(normalizeGtin("00000000000000")).toBeNull();
  });
});

describe("gtinCheckDigit / hasGtinShape", () => {
  it("computes the GS1 mod-10 digit", () => {
    expect(gtinCheckDigit("400638133393")).toBe(1);
    expect(gtinCheckDigit("9638507")).toBe(4);
    expect(gtinCheckDigit("1061414100041")).toBe(5);
  });

  it("checks the shape only", () => {
    expect(hasGtinShape("4006381333932")).toBe(true);
    expect(hasGtinShape("123456789")).toBe(false);
  });
});
