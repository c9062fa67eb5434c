import { detectEnvironmentalClaims, findClaimTerms, foldText } from "./environmental-claims";

describe("findClaimTerms", () => {
  it.each([
    ["An eco-friendly T-shirt", ["eco friendly"]],
    ["ECO FRIENDLY cotton", ["eco friendly"]],
    ["Our greenest, most sustainable range", ["sustainable"]],
    ["A green jacket", ["green"]],
    ["Climate neutral shipping", ["climate neutral"]],
    ["climate-neutral", ["climate neutral"]],
    ["Carbon neutral since 2020", ["carbon neutral"]],
    ["Produit respectueux de l'environnement", ["respectueux de l'environnement"]],
    ["Produit respectueux de l’environnement", ["respectueux de l'environnement"]],
    ["Emballage biodégradable", ["biodegradable"]],
    ["Emballage BIODEGRADABLE", ["biodegradable"]],
    ["Une mode éco-responsable et écologique", ["eco responsable", "ecologique"]],
    ["Neutre en carbone", ["neutre en carbone"]],
  ])("finds the claim in %j", (text, expected) => {
    expect(findClaimTerms(text).sort()).toEqual([...expected].sort());
  });

  it.each([
    "Greenland wool",
    "Evergreen classic",
    "Economy shipping",
    "Unsustainably cheap? No.",
    "100% cotton, wash at 30 °C",
    "Tissu durable et résistant",
    "Made by Greenwood Ltd",
  ])("finds no claim in %j (whole words only)", (text) => {
    expect(findClaimTerms(text)).toEqual([]);
  });

  it("folds accents and case", () => {
    expect(foldText("Écologique BIODÉGRADABLE")).toBe("ecologique biodegradable");
  });
});

describe("detectEnvironmentalClaims", () => {
  it("reports wording anywhere in string values, with pointers", () => {
    const findings = detectEnvironmentalClaims("textile", {
      product_name: "Organic T-shirt",
      product_description: "A sustainable tee",
      certifications: [{ scheme: "EU Ecolabel" }],
      material_composition: [{ fiber: "eco-friendly cotton", percentage: 100 }],
    });
    expect(findings).toEqual([
      { pointer: "/data/certifications", kind: "environmental_field", terms: [] },
      { pointer: "/data/product_description", kind: "wording", terms: ["sustainable"] },
      { pointer: "/data/material_composition/0/fiber", kind: "wording", terms: ["eco friendly"] },
    ]);
  });

  it("reports filled x-environmental fields and ignores empty ones", () => {
    expect(
      detectEnvironmentalClaims("textile", {
        recycled_content_percentage: 30,
        carbon_footprint: { value: 5.2, unit: "kgCO2e" },
        certifications: [],
      }).map((f) => f.pointer),
    ).toEqual(["/data/recycled_content_percentage", "/data/carbon_footprint"]);
    expect(
      detectEnvironmentalClaims("battery", { carbon_footprint_per_kwh: { value: 60, unit: "kgCO2e/kWh" } }),
    ).toEqual([{ pointer: "/data/carbon_footprint_per_kwh", kind: "environmental_field", terms: [] }]);
  });

  it("finds nothing in a plain passport", () => {
    expect(
      detectEnvironmentalClaims("textile", { product_name: "Cotton T-shirt", manufacturer_country: "PT" }),
    ).toEqual([]);
  });
});
