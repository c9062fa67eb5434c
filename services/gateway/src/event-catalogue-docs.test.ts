/**
 * The event catalogue as documented must be the catalogue the services use
 * (EVENT_CATALOGUE in the contract): the "Event catalogue" table of the API
 * documentation as served (src/openapi.generated.ts) and of docs/events.md
 * list exactly its types with exactly their `related` fields, and each type's
 * `EventRelated` schema in the OpenAPI document requires exactly those fields.
 */
import fs from "node:fs";
import path from "node:path";
import { EVENT_CATALOGUE } from "@dpp/contract";
import { OPENAPI_DOCUMENT } from "./openapi.generated";

const ROOT = path.resolve(__dirname, "../../..");
const catalogue = Object.entries(EVENT_CATALOGUE).map(([type, e]) => ({
  type,
  related: [...(e.related as readonly string[])],
}));

/** Rows `| \`type\` | \`f1\`, \`f2\` | ... |` of the table under an "Event catalogue" heading. */
function tableRows(markdown: string): { type: string; related: string[] }[] {
  const start = markdown.search(/^#+ Event catalogue\s*$/m);
  expect(start).toBeGreaterThanOrEqual(0);
  const rest = markdown.slice(start).split("\n").slice(1);
  const next = rest.findIndex((l) => /^#+ /.test(l.trim()));
  const section = next < 0 ? rest : rest.slice(0, next);
  return section
    .map((l) => l.trim())
    .filter((l) => /^\|\s*`[a-z_]+\.[a-z_]+`\s*\|/.test(l))
    .map((l) => {
      const cells = l.split("|").map((c) => c.trim());
      return {
        type: cells[1]!.replace(/`/g, ""),
        related: cells[2]!.split(",").map((f) => f.trim().replace(/`/g, "")),
      };
    });
}

describe("event catalogue documentation", () => {
  const openapi = OPENAPI_DOCUMENT as unknown as {
    info: { description: string };
    components: {
      schemas: Record<string, { description?: string; required?: string[]; properties?: object }>;
    };
  };

  it("the API documentation lists exactly the catalogue's types and related fields", () => {
    expect(tableRows(openapi.info.description)).toEqual(catalogue);
  });

  it("docs/events.md lists exactly the catalogue's types and related fields", () => {
    expect(tableRows(fs.readFileSync(path.join(ROOT, "docs/events.md"), "utf8"))).toEqual(catalogue);
  });

  it("each type's EventRelated schema requires exactly the catalogue's related fields", () => {
    const schemas = openapi.components.schemas;
    for (const { type, related } of catalogue) {
      const resource = type.split(".")[0]!;
      // The schema that names the type itself (`unit.reading_recorded`), else the one of its resource (`unit.*`).
      const describing = (text: string) =>
        Object.entries(schemas).filter(
          ([name, s]) => name.endsWith("EventRelated") && s.description?.includes(`\`${text}\``),
        );
      const named = describing(type);
      const matches = named.length ? named : describing(`${resource}.*`);
      expect({ type, schemas: matches.length }).toEqual({ type, schemas: 1 });
      const [, schema] = matches[0]!;
      expect({ type, required: [...(schema.required ?? [])].sort() }).toEqual({
        type,
        required: [...related].sort(),
      });
      expect({ type, properties: Object.keys(schema.properties ?? {}).sort() }).toEqual({
        type,
        properties: [...related].sort(),
      });
    }
  });
});
