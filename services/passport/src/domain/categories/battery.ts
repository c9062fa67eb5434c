/**
 * Batteries: the battery passport of Regulation (EU) 2023/1542, Art. 77-78 and Annex XIII (LMT batteries, industrial
 * batteries above 2 kWh and electric-vehicle batteries, from 18 February 2027).
 *
 * Access tiers follow Annex XIII: point 1 is public; points 2 (detailed composition, spare parts, dismantling, safety)
 * are for persons with a legitimate interest and the Commission ("restricted"); point 3 (test reports) is for notified
 * bodies, market surveillance authorities and the Commission ("authority"). Point 4 (individual battery values:
 * state of health, status, usage) is dynamic and recorded per serialized unit, not in `data`.
 */
import {
  CAS_NUMBER_PATTERN,
  COMMODITY_CODE_PATTERN,
  YEAR_MONTH_PATTERN,
  countryCode,
  defineCategory,
  enumeration,
  gtin,
  item,
  longText,
  objectList,
  percentage,
  quantity,
  stringList,
  text,
  withDocument,
} from "./fields";

/** Battery categories of Art. 3 of Regulation (EU) 2023/1542. */
export const BATTERY_CATEGORIES = ["portable", "lmt", "sli", "industrial", "electric_vehicle"] as const;

export const BATTERY_COMPONENTS = [
  "cathode",
  "anode",
  "electrolyte",
  "separator",
  "casing",
  "other",
] as const;

export const battery = defineCategory({
  id: "battery",
  displayName: "Batteries",
  description:
    "Battery passport per Regulation (EU) 2023/1542 Annex XIII: battery model information (Annex VI Part A), composition, carbon footprint, recycled and renewable content, performance and durability parameters (Annex IV Part A), and restricted dismantling and test information.",
  schemaVersion: "2026-08-01",
  regulations: [
    "Regulation (EU) 2023/1542 (Batteries Regulation), Art. 7, 8, 13, 52, 77, 78, Annexes IV, VI and XIII",
    "Regulation (EU) 2024/1781 (Ecodesign for Sustainable Products Regulation), Annex III identifiers",
  ],
  properties: {
    // --- Identification (Annex VI Part A points 2-5) --------------------------------------------------------------
    product_name: text({
      title: "Product name",
      description: "Commercial name of the battery model.",
      publish: true,
    }),
    battery_model_identifier: text({
      title: "Battery model identifier",
      description: "Identification of the battery model (Annex VI Part A point 3).",
      publish: true,
    }),
    battery_category: enumeration(
      {
        title: "Battery category",
        description:
          "Category of the battery under Art. 3: portable, LMT, SLI, industrial or electric vehicle.",
        publish: true,
      },
      BATTERY_CATEGORIES,
    ),
    gtin: gtin({
      title: "GTIN",
      description: "GS1 Global Trade Item Number (8, 12, 13 or 14 digits) of the battery model.",
    }),
    serial_number: text({
      title: "Serial number",
      description:
        "Serial number of the individual battery this passport describes, when it describes one battery.",
    }),
    commodity_code: text(
      {
        title: "Commodity code",
        description: "Combined Nomenclature (8 digits) or TARIC (10 digits) code.",
      },
      { maxLength: 10, pattern: COMMODITY_CODE_PATTERN },
    ),
    manufacturing_place: text({
      title: "Place of manufacture",
      description: "Place (site and country) where the battery was manufactured (Annex VI Part A point 4).",
      publish: true,
    }),
    manufacturing_date: text(
      {
        title: "Date of manufacture",
        description: "Month and year of manufacture, YYYY-MM (Annex VI Part A point 5).",
        publish: true,
      },
      { maxLength: 7, pattern: YEAR_MONTH_PATTERN },
    ),
    manufacturing_facility_identifier: text({
      title: "Manufacturing facility identifier",
      description: "Unique identifier of the manufacturing facility (ESPR Annex III (i)), e.g. a GLN.",
      tier: "restricted",
    }),

    // --- Manufacturer (Annex VI Part A point 1, Art. 38(7)) --------------------------------------------------------
    manufacturer_name: text({
      title: "Manufacturer name",
      description: "Registered trade name of the manufacturer.",
      publish: true,
    }),
    manufacturer_address: text(
      {
        title: "Manufacturer address",
        description: "Postal address of the manufacturer.",
        publish: true,
      },
      { maxLength: 1000 },
    ),
    manufacturer_country: countryCode({
      title: "Manufacturer country",
      description: "Country of the manufacturer's address (ISO 3166-1 alpha-2).",
    }),
    manufacturer_contact: text({
      title: "Manufacturer contact",
      description: "Web address or e-mail address where the manufacturer can be contacted.",
    }),
    manufacturer_operator_identifier: text({
      title: "Manufacturer operator identifier",
      description: "Unique operator identifier of the manufacturer, e.g. a GLN or EORI number.",
    }),

    // --- Physical characteristics and composition (Annex VI Part A points 6-11, Annex XIII 1(b)) ---------------
    battery_weight: quantity("kg", {
      title: "Weight",
      description: "Weight of the battery (Annex VI Part A point 6).",
      publish: true,
    }),
    rated_capacity: quantity("Ah", {
      title: "Rated capacity",
      description: "Rated capacity in ampere-hours (Annex VI Part A point 7, Annex XIII 1(g)).",
      publish: true,
    }),
    battery_chemistry: text({
      title: "Chemistry",
      description: 'Battery chemistry, e.g. "NMC811", "LFP", "lead-acid" (Annex VI Part A point 8).',
      publish: true,
    }),
    hazardous_substances: objectList(
      {
        title: "Hazardous substances",
        description:
          "Hazardous substances present in the battery other than mercury, cadmium or lead (Annex VI Part A point 9); an empty list declares none.",
        publish: true,
      },
      {
        properties: {
          name: item.text("Name of the substance."),
          cas_number: item.pattern("CAS registry number.", CAS_NUMBER_PATTERN),
          hazard_class: item.text("Hazard class or category under Regulation (EC) No 1272/2008."),
        },
        required: ["name"],
      },
    ),
    critical_raw_materials: stringList({
      title: "Critical raw materials",
      description:
        'Critical raw materials present above 0.1 % weight by weight, e.g. "cobalt", "lithium", "natural graphite" (Annex VI Part A point 11); an empty list declares none.',
      publish: true,
    }),
    usable_extinguishing_agent: text({
      title: "Usable extinguishing agent",
      description: "Extinguishing agent usable on a battery fire (Annex VI Part A point 10).",
      publish: true,
    }),

    // --- Carbon footprint (Art. 7, Annex XIII 1(c)) ------------------------------------------------------------
    carbon_footprint_per_kwh: quantity("kgCO2e/kWh", {
      title: "Carbon footprint",
      description:
        "Life-cycle carbon footprint per functional unit: kg CO2 equivalent per kWh of total energy provided over the service life.",
      environmental: true,
    }),
    carbon_footprint_performance_class: text(
      {
        title: "Carbon footprint performance class",
        description: "Carbon footprint performance class of the battery model (Art. 7(2)).",
        environmental: true,
      },
      { maxLength: 20 },
    ),
    ...withDocument(
      "carbon_footprint_study",
      text(
        {
          title: "Carbon footprint study",
          description:
            "Web link to the public version of the carbon footprint study (Art. 7(1)); the study may be attached.",
          environmental: true,
        },
        { maxLength: 2048 },
      ),
    ),

    // --- Recycled and renewable content (Art. 8, Annex XIII 1(e)-(f)) --------------------------------------------
    recycled_content_cobalt_percentage: percentage({
      title: "Recycled cobalt",
      description:
        "Share of cobalt recovered from manufacturing or post-consumer waste in the active materials.",
      environmental: true,
    }),
    recycled_content_lithium_percentage: percentage({
      title: "Recycled lithium",
      description:
        "Share of lithium recovered from manufacturing or post-consumer waste in the active materials.",
      environmental: true,
    }),
    recycled_content_nickel_percentage: percentage({
      title: "Recycled nickel",
      description:
        "Share of nickel recovered from manufacturing or post-consumer waste in the active materials.",
      environmental: true,
    }),
    recycled_content_lead_percentage: percentage({
      title: "Recycled lead",
      description: "Share of lead recovered from waste present in the battery.",
      environmental: true,
    }),
    renewable_content_percentage: percentage({
      title: "Renewable content",
      description: "Share of renewable content in the battery (Annex XIII 1(f)).",
      environmental: true,
    }),

    // --- Performance and durability, static values (Annex IV Part A, Annex XIII 1(g)-(p)) ---------------------
    nominal_voltage: quantity("V", {
      title: "Nominal voltage",
      description: "Nominal voltage (Annex XIII 1(h)).",
      publish: true,
    }),
    minimum_voltage: quantity("V", {
      title: "Minimum voltage",
      description: "Minimum voltage, with the temperature range where relevant given in the reference test.",
    }),
    maximum_voltage: quantity("V", {
      title: "Maximum voltage",
      description: "Maximum voltage, with the temperature range where relevant given in the reference test.",
    }),
    original_power_capability: quantity("W", {
      title: "Original power capability",
      description: "Original power capability in watts (Annex XIII 1(i)).",
    }),
    certified_usable_energy: quantity("kWh", {
      title: "Certified usable energy",
      description:
        "Certified usable battery energy; the reference for the state of certified energy (Annex VII).",
    }),
    expected_lifetime: quantity(
      "cycles",
      {
        title: "Expected lifetime",
        description: "Expected battery lifetime expressed in charge-discharge cycles (Annex XIII 1(j)).",
      },
      { integer: true },
    ),
    expected_lifetime_reference_test: text({
      title: "Lifetime reference test",
      description: "Reference test used to establish the expected lifetime in cycles.",
    }),
    cycle_life_test_c_rate: quantity("C", {
      title: "C-rate of the cycle-life test",
      description: "C-rate of the relevant cycle-life test (Annex XIII 1(p)).",
    }),
    capacity_threshold_for_exhaustion_percentage: percentage({
      title: "Capacity threshold for exhaustion",
      description:
        "Remaining capacity, as a share of rated capacity, at which the battery counts as exhausted (EV batteries).",
    }),
    idle_temperature_min: quantity(
      "degC",
      {
        title: "Idle temperature, lower limit",
        description: "Lowest temperature the battery can withstand when not in use (Annex XIII 1(l)).",
      },
      { minimum: null },
    ),
    idle_temperature_max: quantity(
      "degC",
      {
        title: "Idle temperature, upper limit",
        description: "Highest temperature the battery can withstand when not in use (Annex XIII 1(l)).",
      },
      { minimum: null },
    ),
    commercial_warranty_period: quantity("years", {
      title: "Commercial warranty period",
      description:
        "Period for which the commercial warranty for the calendar life applies (Annex XIII 1(m)).",
    }),
    initial_round_trip_efficiency_percentage: percentage({
      title: "Initial round-trip energy efficiency",
      description: "Initial round-trip energy efficiency (Annex XIII 1(n)).",
    }),
    mid_life_round_trip_efficiency_percentage: percentage({
      title: "Round-trip energy efficiency at 50 % of cycle life",
      description: "Round-trip energy efficiency at 50 % of the cycle life (Annex XIII 1(n)).",
    }),
    internal_resistance_cell: quantity("mOhm", {
      title: "Initial internal resistance, cell",
      description: "Initial internal resistance of a battery cell (Annex XIII 1(o)).",
    }),
    internal_resistance_pack: quantity("mOhm", {
      title: "Initial internal resistance, pack",
      description: "Initial internal resistance of the battery pack (Annex XIII 1(o)).",
    }),

    // --- Due diligence, end of life, conformity ------------------------------------------------------------------
    ...withDocument(
      "due_diligence_report",
      text(
        {
          title: "Supply chain due diligence report",
          description:
            "Web link to the supply chain due diligence report (Art. 52(3)); the report may be attached.",
        },
        { maxLength: 2048 },
      ),
    ),
    end_of_life_information: longText({
      title: "Waste prevention and management",
      description:
        "Information on the prevention and management of waste batteries: take-back, separate collection, treatment and recycling (Art. 60(1)).",
    }),
    ...withDocument(
      "declaration_of_conformity",
      text({
        title: "EU declaration of conformity",
        description:
          "Reference of the EU declaration of conformity (Art. 18, Annex IX); the declaration may be attached.",
        publish: true,
      }),
    ),

    // --- Restricted: persons with a legitimate interest and the Commission (Annex XIII point 2) --------------------
    detailed_composition: objectList(
      {
        title: "Detailed composition",
        description:
          "Detailed composition, including the materials used in the cathode, anode and electrolyte.",
        tier: "restricted",
      },
      {
        properties: {
          component: item.enumeration("Battery component.", BATTERY_COMPONENTS),
          material: item.text("Material used in the component."),
          cas_number: item.pattern("CAS registry number of the material.", CAS_NUMBER_PATTERN),
          weight_percentage: item.percentage("Share of the battery's weight, 0 to 100."),
        },
        required: ["component", "material"],
      },
    ),
    spare_parts: objectList(
      {
        title: "Spare parts",
        description: "Part numbers for components and contact details of sources for replacement spares.",
        tier: "restricted",
      },
      {
        properties: {
          part_number: item.text("Part number of the component."),
          description: item.text("What the part is."),
          supplier_contact: item.text(
            "Where the spare can be obtained (web address, e-mail or postal address).",
            1000,
          ),
        },
        required: ["part_number"],
      },
    ),
    ...withDocument(
      "dismantling_information",
      longText({
        title: "Dismantling information",
        description:
          "Exploded diagrams, disassembly sequences, fastening techniques, tools, warnings, number and layout of cells; the manual may be attached.",
        tier: "restricted",
      }),
    ),
    safety_measures: longText({
      title: "Safety measures",
      description: "Safety measures for handling, dismantling and repurposing the battery.",
      tier: "restricted",
    }),

    // --- Authority: notified bodies, market surveillance authorities, the Commission (Annex XIII point 3) ---------
    ...withDocument(
      "test_reports",
      longText({
        title: "Test reports",
        description:
          "Results of test reports proving compliance with the Batteries Regulation; the reports may be attached.",
        tier: "authority",
      }),
    ),
  },
});
