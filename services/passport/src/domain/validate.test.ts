import { VALIDATION_RULES, escapePointerToken, publishIssues, validatePassportData } from "./validate";

const observedTextile = {
  product_name: "Organic cotton T-shirt",
  product_description: "Short-sleeved crew-neck T-shirt.",
  manufacturer_name: "Example Apparel SA",
  manufacturer_address: "Rua das Flores 12, 4050-262 Porto",
  manufacturer_country: "PT",
  material_composition: [
    { fiber: "cotton", percentage: 95 },
    { fiber: "elastane", percentage: 5 },
  ],
  substances_of_concern: [],
  recycled_content_percentage: 20,
  recycling_instructions: "Return to any collection point for used textiles.",
  gtin: "4006381333931",
};

const battery = {
  product_name: "EV pack 75",
  battery_model_identifier: "EVP-75-A",
  battery_category: "electric_vehicle",
  gtin: "10614141000415",
  serial_number: "SN-0001",
  manufacturer_name: "Example Cells GmbH",
  manufacturer_address: "Industriestr. 1, 38440 Wolfsburg",
  manufacturing_place: "Wolfsburg, DE",
  manufacturing_date: "2026-07",
  battery_weight: { value: 450, unit: "kg" },
  rated_capacity: { value: 200, unit: "Ah" },
  nominal_voltage: { value: 400, unit: "V" },
  battery_chemistry: "NMC811",
  hazardous_substances: [{ name: "Lithium hexafluorophosphate", cas_number: "21324-40-3" }],
  critical_raw_materials: ["cobalt", "lithium", "natural graphite"],
  usable_extinguishing_agent: "Water",
  carbon_footprint_per_kwh: { value: 61.5, unit: "kgCO2e/kWh" },
  recycled_content_cobalt_percentage: 16,
  expected_lifetime: { value: 3000, unit: "cycles" },
  idle_temperature_min: { value: -30, unit: "degC" },
  declaration_of_conformity: "DoC-2026-0042",
};

function rulesAt(issues: ReturnType<typeof validatePassportData>) {
  return issues.map((i) => ({ pointer: "pointer" in i.source ? i.source.pointer : "", rule: i.rule }));
}

describe("validatePassportData", () => {
  it("accepts a textile document with the observed fields", () => {
    expect(validatePassportData("textile", observedTextile)).toEqual([]);
  });

  it("accepts an empty draft", () => {
    expect(validatePassportData("textile", {})).toEqual([]);
    expect(validatePassportData("battery", {})).toEqual([]);
    expect(validatePassportData("general", {})).toEqual([]);
  });

  it("accepts a battery document with quantities and their units", () => {
    expect(validatePassportData("battery", battery)).toEqual([]);
  });

  it("accepts a general product document", () => {
    const data = {
      product_name: "Desk lamp",
      manufacturer_name: "Lumen BV",
      manufacturer_country: "NL",
      gtin: "96385074",
      materials: [{ material: "aluminium", percentage: 70 }, { material: "glass" }],
      substances_of_concern: ["lead"],
      product_mass: { value: 1.2, unit: "kg" },
      repairability_score: { value: 7.5, unit: "points" },
      certifications: [{ scheme: "EU Ecolabel", valid_until: "2028-12-31" }],
      certifications_document_id: "doc_9",
    };
    expect(validatePassportData("general", data)).toEqual([]);
  });

  it("refuses an unknown key at /data/<key> with rule unknown_field", () => {
    const issues = validatePassportData("textile", { ...observedTextile, colour_name: "red" });
    expect(rulesAt(issues)).toEqual([{ pointer: "/data/colour_name", rule: "unknown_field" }]);
    expect(issues[0].message).toMatch(/colour_name/);
  });

  it("escapes / and ~ in the pointer of an unknown key", () => {
    const issues = validatePassportData("textile", { "a/b~c": 1, "~x": 2 });
    expect(rulesAt(issues)).toEqual([
      { pointer: "/data/a~1b~0c", rule: "unknown_field" },
      { pointer: "/data/~0x", rule: "unknown_field" },
    ]);
    expect(escapePointerToken("~/~1")).toBe("~0~1~01");
  });

  it("points at the missing key inside an array item", () => {
    const data = {
      ...observedTextile,
      material_composition: [{ fiber: "cotton", percentage: 95 }, { fiber: "elastane" }],
    };
    expect(rulesAt(validatePassportData("textile", data))).toEqual([
      { pointer: "/data/material_composition/1/percentage", rule: "required" },
    ]);
  });

  it("refuses a wrong unit with rule unit", () => {
    const issues = validatePassportData("battery", {
      ...battery,
      battery_weight: { value: 450000, unit: "g" },
    });
    expect(rulesAt(issues)).toEqual([{ pointer: "/data/battery_weight/unit", rule: "unit" }]);
    expect(issues[0].message).toBe('The unit must be "kg", not "g".');
  });

  it("refuses a bare number where a quantity with its unit is expected", () => {
    const issues = validatePassportData("battery", { rated_capacity: 200 });
    expect(rulesAt(issues)).toEqual([{ pointer: "/data/rated_capacity", rule: "type" }]);
    expect(issues[0].message).toBe('Expected an object {"value": <number>, "unit": "Ah"}.');
  });

  it("requires both value and unit, and nothing else, in a quantity", () => {
    const issues = validatePassportData("battery", {
      rated_capacity: { value: 200 },
      nominal_voltage: { value: 400, unit: "V", tolerance: 5 },
    });
    expect(rulesAt(issues)).toEqual([
      { pointer: "/data/rated_capacity/unit", rule: "required" },
      { pointer: "/data/nominal_voltage/tolerance", rule: "unknown_field" },
    ]);
    expect(issues[0].message).toMatch(/"Ah"/);
  });

  it("refuses a GTIN with a bad check digit", () => {
    const issues = validatePassportData("textile", { ...observedTextile, gtin: "4006381333932" });
    expect(rulesAt(issues)).toEqual([{ pointer: "/data/gtin", rule: "gtin_check_digit" }]);
    expect(issues[0].message).toBe("The GTIN check digit is wrong: expected 1, got 2.");
  });

  it("reports a GTIN of the wrong shape once, as pattern", () => {
    for (const gtin of ["12345678901", "4006381333a31", ""]) {
      expect(rulesAt(validatePassportData("general", { gtin }))).toEqual([
        { pointer: "/data/gtin", rule: "pattern" },
      ]);
    }
  });

  it("accepts the document-id companion key of a field that can carry a file", () => {
    expect(
      validatePassportData("battery", {
        declaration_of_conformity_document_id: "doc_0001",
        test_reports_document_id: "doc_0002",
      }),
    ).toEqual([]);
    expect(validatePassportData("textile", { care_instructions_document_id: "doc_3" })).toEqual([]);
    expect(rulesAt(validatePassportData("textile", { product_name_document_id: "doc_3" }))).toEqual([
      { pointer: "/data/product_name_document_id", rule: "unknown_field" },
    ]);
    expect(rulesAt(validatePassportData("battery", { declaration_of_conformity_document_id: 7 }))).toEqual([
      { pointer: "/data/declaration_of_conformity_document_id", rule: "type" },
    ]);
  });

  it("reports every problem at once, with stable rule names and messages", () => {
    const issues = validatePassportData("textile", {
      product_name: 42,
      manufacturer_country: "pt",
      recycled_content_percentage: 120,
      substances_of_concern: ["lead", "lead"],
      material_composition: [],
      end_of_life_category: "landfill",
      certifications: [{ scheme: "GOTS", valid_until: "31/12/2027" }],
      washing_durability: { value: 50.5, unit: "cycles" },
    });
    expect(rulesAt(issues)).toEqual(
      expect.arrayContaining([
        { pointer: "/data/product_name", rule: "type" },
        { pointer: "/data/manufacturer_country", rule: "pattern" },
        { pointer: "/data/recycled_content_percentage", rule: "maximum" },
        { pointer: "/data/substances_of_concern", rule: "unique_items" },
        { pointer: "/data/material_composition", rule: "min_items" },
        { pointer: "/data/end_of_life_category", rule: "enum" },
        { pointer: "/data/certifications/0/valid_until", rule: "format" },
        { pointer: "/data/washing_durability/value", rule: "type" },
      ]),
    );
    expect(issues).toHaveLength(8);
    for (const i of issues) {
      expect(VALIDATION_RULES).toContain(i.rule);
      expect(i.message).toMatch(/^[A-Z"].*\.$/);
    }
    const byPointer = Object.fromEntries(
      issues.map((i) => ["pointer" in i.source && i.source.pointer, i.message]),
    );
    expect(byPointer["/data/manufacturer_country"]).toMatch(/ISO 3166-1 alpha-2/);
    expect(byPointer["/data/recycled_content_percentage"]).toBe("Must be at most 100%.");
    expect(byPointer["/data/product_name"]).toBe("Expected a string.");
  });

  it("reports length limits and negative quantities", () => {
    const issues = validatePassportData("battery", {
      product_name: "x".repeat(256),
      battery_weight: { value: -1, unit: "kg" },
      declaration_of_conformity_document_id: "",
    });
    expect(rulesAt(issues)).toEqual([
      { pointer: "/data/product_name", rule: "max_length" },
      { pointer: "/data/battery_weight/value", rule: "minimum" },
      { pointer: "/data/declaration_of_conformity_document_id", rule: "min_length" },
    ]);
    expect(issues[1].message).toBe("Must be at least 0 kg.");
  });

  it("refuses data that is not an object with one type issue at /data", () => {
    for (const data of [null, [], "text", 3, undefined]) {
      expect(rulesAt(validatePassportData("textile", data))).toEqual([{ pointer: "/data", rule: "type" }]);
    }
  });

  it("reports an unknown category", () => {
    expect(rulesAt(validatePassportData("toys", {}))).toEqual([
      { pointer: "/category", rule: "unknown_category" },
    ]);
  });

  it("does not change the data it validates", () => {
    const data = JSON.parse(JSON.stringify(battery));
    validatePassportData("battery", data);
    validatePassportData("battery", { ...data, extra: true });
    expect(data).toEqual(battery);
  });
});

describe("publishIssues", () => {
  it("lists missing fields marked x-required-for-publish", () => {
    const issues = publishIssues("textile", { product_name: "T-shirt" });
    expect(rulesAt(issues)).toEqual([
      { pointer: "/data/manufacturer_name", rule: "required_for_publish" },
      { pointer: "/data/manufacturer_address", rule: "required_for_publish" },
      { pointer: "/data/manufacturer_country", rule: "required_for_publish" },
      { pointer: "/data/material_composition", rule: "required_for_publish" },
      { pointer: "/data/substances_of_concern", rule: "required_for_publish" },
      { pointer: "/data/recycling_instructions", rule: "required_for_publish" },
      { pointer: "/data/care_instructions", rule: "required_for_publish" },
    ]);
    expect(issues[0].message).toBe('Manufacturer name ("manufacturer_name") is required before publishing.');
    expect(issues[6].message).toMatch(/care_instructions_document_id/);
  });

  it("treats blank strings and null as missing, and an empty list as a declaration of none", () => {
    const data = {
      ...observedTextile,
      care_instructions: "Wash at 30 °C.",
      manufacturer_name: "  ",
      product_name: null,
    };
    expect(rulesAt(publishIssues("textile", data))).toEqual([
      { pointer: "/data/product_name", rule: "required_for_publish" },
      { pointer: "/data/manufacturer_name", rule: "required_for_publish" },
    ]);
  });

  it("is satisfied by a companion document instead of the field's value", () => {
    const { declaration_of_conformity: _omit, ...rest } = battery;
    expect(rulesAt(publishIssues("battery", rest))).toEqual([
      { pointer: "/data/declaration_of_conformity", rule: "required_for_publish" },
    ]);
    expect(publishIssues("battery", { ...rest, declaration_of_conformity_document_id: "doc_1" })).toEqual([]);
    expect(publishIssues("battery", battery)).toEqual([]);
  });

  it("lists every required field when data is not an object, and refuses an unknown category", () => {
    expect(publishIssues("general", null).map((i) => i.rule)).toEqual(
      Array(publishIssues("general", {}).length).fill("required_for_publish"),
    );
    expect(publishIssues("general", null).length).toBeGreaterThan(0);
    expect(rulesAt(publishIssues("toys", {}))).toEqual([{ pointer: "/category", rule: "unknown_category" }]);
  });
});
