import {
  ACCESS_TIERS,
  createCategoryAjv,
  documentIdKeys,
  environmentalFields,
  fieldAccessTiers,
  fieldsRequiredForPublish,
  findCategory,
  listCategories,
} from "./index";
import type { FieldSchema } from "./index";

type Node = Record<string, unknown>;

/** Calls `visit` on every schema node reachable through properties / items, with a path for messages. */
function walk(node: Node, path: string, visit: (node: Node, path: string) => void): void {
  visit(node, path);
  const properties = node.properties as Record<string, Node> | undefined;
  if (properties) for (const [k, child] of Object.entries(properties)) walk(child, `${path}/${k}`, visit);
  const items = node.items as Node | undefined;
  if (items) walk(items, `${path}/items`, visit);
}

const categories = listCategories();

describe("category registry", () => {
  it("has textile, battery and general", () => {
    expect(categories.map((c) => c.id)).toEqual(expect.arrayContaining(["textile", "battery", "general"]));
    expect(findCategory("battery")?.displayName).toBe("Batteries");
    expect(findCategory("toys")).toBeUndefined();
    expect(fieldsRequiredForPublish("toys")).toEqual([]);
  });

  it("keeps definitions immutable", () => {
    const textile = findCategory("textile")!;
    expect(Object.isFrozen(textile.schema.properties.product_name)).toBe(true);
    expect(() => {
      (textile.schema.properties as Record<string, FieldSchema>).extra = { type: "string" };
    }).toThrow();
  });

  describe.each(categories.map((c) => [c.id, c] as const))("%s", (id, category) => {
    const { schema } = category;

    it("is a versioned JSON Schema 2020-12 object document", () => {
      expect(category.schemaVersion).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
      expect(schema.$id).toBe(`https://schemas.dpp.example/categories/${id}/${category.schemaVersion}`);
      expect(schema.type).toBe("object");
      expect(schema.additionalProperties).toBe(false);
      expect(schema.title).toEqual(expect.any(String));
      expect(category.regulations.length).toBeGreaterThan(0);
      expect((schema as unknown as Node).required).toBeUndefined();
      expect(JSON.parse(JSON.stringify(schema))).toEqual(schema);
    });

    it("compiles with ajv in strict mode", () => {
      const ajv = createCategoryAjv();
      expect(() => ajv.compile(schema)).not.toThrow();
    });

    it("gives every numeric node an x-unit", () => {
      const missing: string[] = [];
      walk(schema as unknown as Node, "", (node, path) => {
        if ((node.type === "number" || node.type === "integer") && typeof node["x-unit"] !== "string")
          missing.push(path);
      });
      expect(missing).toEqual([]);
    });

    it("sends quantities as {value, unit} and plain numbers only as percentages", () => {
      for (const [key, field] of Object.entries(schema.properties)) {
        if (field.type === "number" || field.type === "integer") {
          expect([key, field["x-unit"]]).toEqual([key, "%"]);
          expect(key).toMatch(/_percentage$/);
          expect([field.minimum, field.maximum]).toEqual([0, 100]);
        }
        if (field.type === "object") {
          const unit = field["x-unit"];
          expect(typeof unit).toBe("string");
          expect(field.required).toEqual(["value", "unit"]);
          expect(field.additionalProperties).toBe(false);
          const props = field.properties as Record<string, Node>;
          expect(props.unit.const).toBe(unit);
          expect(props.value["x-unit"]).toBe(unit);
        }
      }
    });

    it("annotates every field with publish, access tier and environmental metadata", () => {
      for (const [key, field] of Object.entries(schema.properties)) {
        expect(key).toMatch(/^[a-z][a-z0-9_]*$/);
        expect([key, typeof field["x-required-for-publish"]]).toEqual([key, "boolean"]);
        expect([key, typeof field["x-environmental"]]).toEqual([key, "boolean"]);
        expect(ACCESS_TIERS).toContain(field["x-access-tier"]);
        expect([key, typeof field.title, typeof field.description]).toEqual([key, "string", "string"]);
      }
    });

    it("declares every companion document-id key as a string property", () => {
      const companions = documentIdKeys(id);
      for (const [field, companion] of Object.entries(companions)) {
        expect(companion).toBe(`${field}_document_id`);
        const companionSchema = schema.properties[companion];
        expect(companionSchema).toMatchObject({ type: "string", "x-required-for-publish": false });
        expect(companionSchema["x-access-tier"]).toBe(schema.properties[field]["x-access-tier"]);
      }
    });

    it("has a string gtin field checked as format gtin", () => {
      expect(schema.properties.gtin).toMatchObject({ type: "string", format: "gtin" });
      expect(schema.properties.gtin["x-required-for-publish"]).toBe(false);
    });

    it("lists its publish, environmental and access metadata", () => {
      expect(fieldsRequiredForPublish(id)).toContain("product_name");
      expect(environmentalFields(id).length).toBeGreaterThan(0);
      expect(Object.keys(fieldAccessTiers(id))).toEqual(Object.keys(schema.properties));
    });
  });

  it("keeps the observed textile field names and shapes", () => {
    const p = findCategory("textile")!.schema.properties;
    for (const k of [
      "product_name",
      "product_description",
      "manufacturer_name",
      "manufacturer_address",
      "recycling_instructions",
      "gtin",
    ]) {
      expect([k, p[k].type]).toEqual([k, "string"]);
    }
    expect(p.manufacturer_country).toMatchObject({ type: "string", pattern: "^[A-Z]{2}$" });
    expect(p.material_composition).toMatchObject({
      type: "array",
      items: {
        type: "object",
        required: ["fiber", "percentage"],
        properties: {
          fiber: { type: "string" },
          percentage: { type: "number", minimum: 0, maximum: 100 },
        },
      },
    });
    expect(p.substances_of_concern).toMatchObject({ type: "array", items: { type: "string" } });
    expect(p.recycled_content_percentage).toMatchObject({
      type: "number",
      minimum: 0,
      maximum: 100,
      "x-unit": "%",
    });
  });

  it("grounds the battery category in Annex XIII", () => {
    const p = findCategory("battery")!.schema.properties;
    expect(p.battery_weight["x-unit"]).toBe("kg");
    expect(p.rated_capacity["x-unit"]).toBe("Ah");
    expect(p.nominal_voltage["x-unit"]).toBe("V");
    expect(p.carbon_footprint_per_kwh["x-unit"]).toBe("kgCO2e/kWh");
    expect(p.expected_lifetime["x-unit"]).toBe("cycles");
    for (const m of ["cobalt", "lithium", "nickel", "lead"]) {
      expect(p[`recycled_content_${m}_percentage`]).toMatchObject({ "x-unit": "%", "x-environmental": true });
    }
    expect(p.serial_number.type).toBe("string");
    expect(p.detailed_composition["x-access-tier"]).toBe("restricted");
    expect(p.test_reports["x-access-tier"]).toBe("authority");
    expect(documentIdKeys("battery")).toMatchObject({
      declaration_of_conformity: "declaration_of_conformity_document_id",
    });
    expect(fieldsRequiredForPublish("battery")).toEqual(
      expect.arrayContaining(["battery_category", "rated_capacity", "declaration_of_conformity"]),
    );
  });

  it("refuses metadata with an invalid value at compile time", () => {
    const ajv = createCategoryAjv();
    expect(() =>
      ajv.compile({ type: "object", properties: { a: { type: "string", "x-access-tier": "publc" } } }),
    ).toThrow(/x-access-tier/);
    expect(() => ajv.compile({ type: "object", properties: { a: { type: "number", "x-unit": 3 } } })).toThrow(
      /x-unit/,
    );
  });
});
