/**
 * Any product under ESPR (EU) 2024/1781 that has no more specific category yet: the Annex III identifiers and
 * operators, the Art. 7(2)(b) information requirements (materials, substances of concern, durability, repair,
 * instructions, end of life), and the compliance documents.
 */
import {
  COMMODITY_CODE_PATTERN,
  EORI_PATTERN,
  countryCode,
  defineCategory,
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

export const general = defineCategory({
  id: "general",
  displayName: "General product",
  description:
    "A generic ESPR product: identification, operators, materials, substances of concern, durability and repair, instructions, end of life and compliance documents.",
  schemaVersion: "2026-08-01",
  regulations: [
    "Regulation (EU) 2024/1781 (Ecodesign for Sustainable Products Regulation), Art. 7-13 and Annex III",
    "Commission Implementing Regulation (EU) 2026/1778 (digital product passport registry)",
  ],
  properties: {
    // --- Identification ----------------------------------------------------------------------------------------
    product_name: text({
      title: "Product name",
      description: "Commercial name of the product model.",
      publish: true,
    }),
    product_description: longText({
      title: "Product description",
      description: "Short description of the product as offered to customers.",
    }),
    brand_name: text({ title: "Brand", description: "Brand under which the product is sold." }),
    model_identifier: text({
      title: "Model identifier",
      description: "Manufacturer's model or article reference.",
    }),
    gtin: gtin({
      title: "GTIN",
      description: "GS1 Global Trade Item Number (8, 12, 13 or 14 digits) of the product model.",
    }),
    commodity_code: text(
      {
        title: "Commodity code",
        description:
          "Combined Nomenclature (8 digits) or TARIC (10 digits) code, needed for the EU DPP registry.",
      },
      { maxLength: 10, pattern: COMMODITY_CODE_PATTERN },
    ),

    // --- Operators (ESPR Annex III (h)-(k)) ---------------------------------------------------------------------
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
      publish: true,
    }),
    manufacturer_contact: text({
      title: "Manufacturer contact",
      description: "E-mail address or web address where the manufacturer can be contacted.",
    }),
    manufacturer_operator_identifier: text({
      title: "Manufacturer operator identifier",
      description: "Unique operator identifier of the manufacturer, e.g. a GLN or EORI number.",
    }),
    importer_name: text({
      title: "Importer name",
      description: "Name of the importer, when the manufacturer is established outside the EU.",
    }),
    importer_eori: text(
      {
        title: "Importer EORI",
        description: "EORI number of the importer.",
      },
      { maxLength: 17, pattern: EORI_PATTERN },
    ),
    manufacturing_country: countryCode({
      title: "Country of manufacture",
      description: "Country where the product was last substantially transformed (ISO 3166-1 alpha-2).",
    }),
    manufacturing_facility_identifier: text({
      title: "Manufacturing facility identifier",
      description:
        "Unique facility identifier of the main manufacturing site (ESPR Annex III (i)), e.g. a GLN.",
      tier: "restricted",
    }),

    // --- Materials and substances --------------------------------------------------------------------------------
    materials: objectList(
      {
        title: "Materials",
        description: "Main materials of the product by weight.",
      },
      {
        properties: {
          material: item.text('Material name, e.g. "aluminium", "polypropylene".'),
          percentage: item.percentage("Share of the product's weight, 0 to 100."),
        },
        required: ["material"],
      },
      { maxItems: 100 },
    ),
    substances_of_concern: stringList({
      title: "Substances of concern",
      description:
        "Names of substances of concern present in the product (ESPR Art. 7(5)); an empty list declares that none are present.",
      publish: true,
    }),
    recycled_content_percentage: percentage({
      title: "Recycled content",
      description: "Share of recycled material in the product's weight, 0 to 100.",
      environmental: true,
    }),
    product_mass: quantity("kg", {
      title: "Product mass",
      description: "Mass of one product without packaging.",
    }),

    // --- Durability and repair ---------------------------------------------------------------------------------
    expected_lifetime: quantity("years", {
      title: "Expected lifetime",
      description: "Expected lifetime of the product under normal use.",
    }),
    spare_parts_availability: quantity("years", {
      title: "Spare parts availability",
      description: "How long after the end of placing the model on the market spare parts remain available.",
    }),
    repairability_score: quantity(
      "points",
      {
        title: "Repairability score",
        description: "Repairability score on a scale of 0 to 10 points, where an applicable method exists.",
      },
      { maximum: 10 },
    ),
    repair_information: longText({
      title: "Repair information",
      description: "How the product can be repaired, and where repair services and spare parts are offered.",
    }),
    disassembly_information: longText({
      title: "Disassembly information",
      description: "How to disassemble the product for repair, remanufacturing or recycling.",
      tier: "restricted",
    }),

    // --- Instructions and end of life --------------------------------------------------------------------------
    ...withDocument(
      "user_instructions",
      longText({
        title: "Instructions for use",
        description: "Instructions for installation, use and maintenance; the manual may be attached.",
      }),
    ),
    ...withDocument(
      "safety_information",
      longText({
        title: "Safety information",
        description: "Safety information for users; the safety sheet may be attached.",
      }),
    ),
    recycling_instructions: longText({
      title: "End-of-life instructions",
      description: "How to return, sort or recycle the product at end of life.",
    }),

    // --- Environmental information -----------------------------------------------------------------------------
    carbon_footprint: quantity("kgCO2e", {
      title: "Carbon footprint",
      description: "Life-cycle greenhouse-gas emissions of one product.",
      environmental: true,
    }),
    ...withDocument(
      "certifications",
      objectList(
        {
          title: "Certifications and labels",
          description: "Certifications and labels held by the product; the certificate may be attached.",
          environmental: true,
        },
        {
          properties: {
            scheme: item.text('Certification scheme or label, e.g. "EU Ecolabel".'),
            certificate_number: item.text("Certificate or licence number."),
            issuer: item.text("Certification body."),
            valid_until: item.date("Last day of validity (YYYY-MM-DD)."),
          },
          required: ["scheme"],
        },
        { maxItems: 50 },
      ),
    ),

    // --- Compliance ----------------------------------------------------------------------------------------------
    ...withDocument(
      "declaration_of_conformity",
      text({
        title: "EU declaration of conformity",
        description:
          "Reference of the EU declaration of conformity, where one is required; the declaration may be attached.",
      }),
    ),
    ...withDocument(
      "technical_documentation",
      longText({
        title: "Technical documentation",
        description:
          "Reference to the technical documentation and test reports (ESPR Annex III (g)); for authorities.",
        tier: "authority",
      }),
    ),
  },
});
