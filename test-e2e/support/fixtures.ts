/**
 * The data of a textile passport that passes every publish check, for tests that need a published passport and
 * are about something else. Fields given in `overrides` replace the defaults (and add to them).
 */
export function publishableTextile(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    product_name: "Organic T-shirt",
    manufacturer_name: "Acme",
    manufacturer_address: "1 Rua, Porto",
    manufacturer_country: "PT",
    material_composition: [{ fiber: "cotton", percentage: 100 }],
    substances_of_concern: [],
    recycling_instructions: "Textile bank",
    care_instructions: "30 °C",
    ...overrides,
  };
}

/** The data of a battery passport that passes every publish check of its own (units and the rest aside). */
export function publishableBattery(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    product_name: "Cell pack",
    battery_model_identifier: "CP-48",
    battery_category: "industrial",
    manufacturing_place: "Porto, PT",
    manufacturing_date: "2026-01",
    manufacturer_name: "Acme",
    manufacturer_address: "1 Rua, Porto",
    battery_weight: { value: 12, unit: "kg" },
    rated_capacity: { value: 50, unit: "Ah" },
    battery_chemistry: "LFP",
    hazardous_substances: [],
    critical_raw_materials: [],
    usable_extinguishing_agent: "Water",
    nominal_voltage: { value: 48, unit: "V" },
    declaration_of_conformity: "DoC-2026-01",
    ...overrides,
  };
}
