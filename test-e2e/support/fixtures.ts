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
