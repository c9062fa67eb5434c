import { ApiError } from "@dpp/contract";
import { applyPassportPatch, parsePatchBody } from "./update-passport";

const refusal = (fn: () => unknown): ApiError => {
  try {
    fn();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error("expected a refusal");
};
const issues = (e: ApiError) =>
  (e.details.issues as { source: { pointer: string }; rule: string }[]).map((i) => [
    i.source.pointer,
    i.rule,
  ]);

describe("parsePatchBody", () => {
  it("takes data and external_id", () => {
    expect(parsePatchBody({ data: { a: 1 }, external_id: null })).toEqual({
      data: { a: 1 },
      externalId: null,
    });
    expect(parsePatchBody({})).toEqual({});
  });
  it("counts external_id in Unicode code points", () => {
    const emoji = (n: number) => "\u{1F642}".repeat(n);
    expect(parsePatchBody({ external_id: emoji(255) })).toEqual({ externalId: emoji(255) });
    for (const externalId of [emoji(256), `${"x".repeat(255)}\u{1F642}`, ""])
      expect(issues(refusal(() => parsePatchBody({ external_id: externalId })))).toEqual([
        ["/external_id", "length"],
      ]);
  });
  it("refuses unknown and read-only members with pointers", () => {
    const e = refusal(() => parsePatchBody({ category: "battery", colour: "red", "a/b": 1, data: [] }));
    expect(e.code).toBe("validation_failed");
    expect(issues(e)).toEqual([
      ["/category", "read_only"],
      ["/colour", "unknown_field"],
      ["/a~1b", "unknown_field"],
      ["/data", "type"],
    ]);
  });
});

describe("applyPassportPatch", () => {
  const current = {
    category: "textile",
    data: { product_name: "A", material_composition: [{ fiber: "cotton", percentage: 100 }] },
    external_id: "SKU-1",
  };
  it("merges: omitted unchanged, null removes, arrays replaced whole; GTIN stored as 14 digits", () => {
    const r = applyPassportPatch(current, {
      data: {
        product_name: null,
        material_composition: [{ fiber: "wool", percentage: 100 }],
        gtin: "96385074",
      },
    });
    expect(r).toEqual({
      data: { material_composition: [{ fiber: "wool", percentage: 100 }], gtin: "00000096385074" },
      externalId: "SKU-1",
      gtin: "00000096385074",
      serialNumber: null,
      changed: true,
    });
  });
  it("reports a no-op as unchanged", () => {
    expect(applyPassportPatch(current, { data: { product_name: "A" } }).changed).toBe(false);
    expect(applyPassportPatch(current, { externalId: "SKU-1" }).changed).toBe(false);
    expect(applyPassportPatch(current, { externalId: "SKU-2" }).changed).toBe(true);
  });
  it("refuses unknown keys and a wrong check digit in the merged data, pointing into /data", () => {
    const e = refusal(() => applyPassportPatch(current, { data: { colour: "red", gtin: "4006381333932" } }));
    expect(issues(e)).toEqual(
      expect.arrayContaining([
        ["/data/colour", "unknown_field"],
        ["/data/gtin", "gtin_check_digit"],
      ]),
    );
  });
});
