// The category components of the OpenAPI document, made from the category registry
// (services/passport/src/domain/categories, through the passport package's `./categories` export):
// the same JSON Schema that GET /categories/{category}/schema serves, and the forms derived from it.
// tools/gen-openapi.mjs writes them at the end of `components.schemas` in
// services/gateway/openapi/openapi.yaml (docs/decisions/0017-client-contract-and-sdk.md).
//
// For each category `<id>` (`<P>` its PascalCase name):
//
//   <P>Data                   the category's field schema as served (closed: other keys are refused);
//                             the `data` of a create request
//   <P>DataPatch              its RFC 7386 merge patch: every key optional, `null` removes a key,
//                             objects merged key by key, arrays replaced whole; the `data` of a PATCH
//   <P>DataRead               the same keys as returned by the API, open to keys added later
//   Create<P>PassportRequest  a create request of that category
//   <P>Passport               a passport of that category (PassportFields + category + typed data)
//
// and, over all categories:
//
//   CreatePassportRequest     oneOf the create requests, discriminated by `category`
//   Passport                  oneOf the passports of each category and PassportOfOtherCategory
//   PassportOfOtherCategory   a passport of a category this document does not know (the set is open)
//   PassportDataPatch         anyOf the merge patches (a PATCH body does not name its category)
import { require as tsxRequire } from "tsx/cjs/api";

/** The category registry, loaded from the passport package's TypeScript source through tsx. */
export function loadCategories() {
  const { listCategories } = tsxRequire("@dpp/passport/categories", import.meta.url);
  return listCategories();
}

export const pascal = (id) =>
  id
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join("");

const ref = (name) => ({ $ref: `#/components/schemas/${name}` });
const isPlainObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const clone = (v) => JSON.parse(JSON.stringify(v));
const mapValues = (o, f) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v)]));

/** The served field schema without `$schema` and `$id`: inside the document its dialect and identity are the document's. */
export function fieldSchema(category) {
  const { $schema: _dialect, $id: _id, ...rest } = clone(category.schema);
  return rest;
}

/** A schema that also admits `null`: a type list where the node has one type, else oneOf with null. */
function nullable(schema) {
  if (typeof schema.type !== "string") return { oneOf: [schema, { type: "null" }] };
  const out = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === "type") out.type = [v, "null"];
    else if (k === "enum") out.enum = [...v, null];
    else if (k === "const") out.enum = [v, null];
    else out[k] = v;
  }
  return out;
}

/** RFC 7386: an object's keys become optional and nullable, recursively; anything else replaces whole. */
export function mergePatchOf(schema) {
  if (schema.type !== "object" || !isPlainObject(schema.properties)) return schema;
  const { required: _required, minProperties: _min, ...rest } = schema;
  return { ...rest, properties: mapValues(schema.properties, (s) => nullable(mergePatchOf(s))) };
}

/** The schema as read: every `additionalProperties: false` dropped (response objects are open). */
export function openForReading(schema) {
  if (Array.isArray(schema)) return schema.map(openForReading);
  if (!isPlainObject(schema)) return schema;
  const out = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === "additionalProperties" && v === false) continue;
    out[k] = openForReading(v);
  }
  return out;
}

/** Every category component, in a stable order (the registry's order of categories). */
export function categoryComponents(categories) {
  const ids = categories.map((c) => c.id);
  const schemas = {};
  for (const c of categories) {
    const P = pascal(c.id);
    const served = fieldSchema(c);
    schemas[`${P}Data`] = served;
    schemas[`${P}DataPatch`] = {
      ...mergePatchOf(served),
      title: `${c.displayName} passport data: merge patch`,
      description:
        `An RFC 7386 JSON Merge Patch of a \`${c.id}\` passport's \`data\`: every key is optional, ` +
        `\`null\` removes the key, an object is merged key by key, an array or any other value ` +
        `replaces the old one whole. The merged \`data\` must match \`${P}Data\`.`,
    };
    schemas[`${P}DataRead`] = {
      ...openForReading(served),
      title: `${c.displayName} passport data as read`,
      description:
        `A \`${c.id}\` passport's \`data\` as the API returns it: the keys of \`${P}Data\` ` +
        `(schema version ${c.schemaVersion}). Open: the category may gain keys; ignore the ones you do not know.`,
    };
    schemas[`Create${P}PassportRequest`] = {
      description: `Creates a \`${c.id}\` passport (${c.displayName}).`,
      type: "object",
      required: ["category"],
      additionalProperties: false,
      properties: {
        category: { type: "string", const: c.id, description: "The category; fixed at creation." },
        external_id: ref("ExternalId"),
        data: {
          description: `The passport document: keys of \`${P}Data\` (GET /categories/${c.id}/schema).`,
          oneOf: [ref(`${P}Data`), { type: "null" }],
        },
      },
    };
    schemas[`${P}Passport`] = {
      description: `A passport of the \`${c.id}\` category.`,
      allOf: [
        ref("PassportFields"),
        {
          type: "object",
          required: ["category", "data"],
          properties: {
            category: { type: "string", const: c.id },
            data: ref(`${P}DataRead`),
          },
        },
      ],
    };
  }
  schemas.CreatePassportRequest = {
    description:
      "A create request, by category. The set of categories a client can create in is the set it was " +
      "generated with; a category added later needs a client generated from a newer document.",
    oneOf: categories.map((c) => ref(`Create${pascal(c.id)}PassportRequest`)),
    discriminator: {
      propertyName: "category",
      mapping: Object.fromEntries(
        categories.map((c) => [c.id, `#/components/schemas/Create${pascal(c.id)}PassportRequest`]),
      ),
    },
  };
  schemas.PassportOfOtherCategory = {
    description:
      "A passport of a category this document does not describe (one added after it was generated): " +
      "`data` is an open object. Categories are an open set; a client decodes such a passport as this.",
    allOf: [
      ref("PassportFields"),
      { type: "object", properties: { category: { type: "string", not: { enum: ids } } } },
    ],
  };
  schemas.Passport = {
    description:
      "A digital product passport (full form; list items have the same form): the fields every passport " +
      "has, and `data` typed by its `category`. Exactly one member matches: the one of its category, or " +
      "`PassportOfOtherCategory` for a category added after this document. No `discriminator` is declared " +
      "because a discriminator maps every value to a known schema, and the set of categories is open.",
    oneOf: [...categories.map((c) => ref(`${pascal(c.id)}Passport`)), ref("PassportOfOtherCategory")],
  };
  schemas.PassportDataPatch = {
    description:
      "The `data` member of a PATCH: a merge patch of the passport's category (the body does not name " +
      "the category; the passport's own decides which keys are allowed).",
    anyOf: categories.map((c) => ref(`${pascal(c.id)}DataPatch`)),
  };
  return schemas;
}
