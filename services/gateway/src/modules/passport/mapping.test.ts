import { passportV1, timestampFromDate } from "@dpp/proto";
import { passportJson, passportText } from "./mapping";

const at = (t: string) => timestampFromDate(new Date(t));

function passport(dataJson: string): passportV1.Passport {
  return {
    $typeName: "dpp.passport.v1.Passport",
    id: "pp_1",
    organizationId: "org_1",
    category: "textile",
    status: passportV1.PassportStatus.PUBLISHED,
    gtin: "04006381333931",
    version: 3,
    livemode: true,
    createdAt: at("2026-01-02T03:04:05.678Z"),
    updatedAt: at("2026-01-02T03:04:05.678Z"),
    publishedAt: at("2026-02-01T00:00:00Z"),
    dataJson,
  } as passportV1.Passport;
}

describe("passportText", () => {
  it("is the JSON text of passportJson, data placed as the service rendered it", () => {
    const documents = [
      {},
      { product_name: "Shirt", material_composition: [{ fiber: "cotton", percentage: 100 }] },
      { "10": "integer-like keys first", b: 1.5, a: -0, e: 1e21, n: null, t: true },
      { text: 'é ü € \u2028 \u0001 "quoted" \\ /', nested: { deep: [[[]], {}] } },
    ];
    for (const data of documents) {
      const p = passport(JSON.stringify(data));
      expect(passportText(p).text).toBe(JSON.stringify(passportJson(p)));
    }
    // No document at all is an empty one.
    expect(JSON.parse(passportText(passport("")).text).data).toEqual({});
    expect(passportText(passport("")).text).toBe(JSON.stringify(passportJson(passport(""))));
  });
});
