/**
 * A client generated from the document the running stack serves, as an integrator would make one:
 * openapi-typescript (the CLI, pointed at GET /v1/openapi.json) and openapi-fetch. The integrator
 * flow (generated-client/flow.ts) must type-check against those types with no cast, and run; the
 * same flow must NOT type-check when the document lacks a category field it uses; and each
 * category's data component must be the schema GET /categories/{category}/schema serves
 * (docs/decisions/0017-client-contract-and-sdk.md).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";
import { integratorFlow } from "./generated-client/flow";
import { startHarness, type Harness, type Tenant } from "./support/harness";

const FLOW = path.join(__dirname, "generated-client", "flow.ts");
const CLI = path.join(__dirname, "node_modules", ".bin", "openapi-typescript");
// Under node_modules so that the copied flow resolves openapi-fetch like the original.
const CACHE = path.join(__dirname, "node_modules", ".cache");

let h: Harness;
let t: Tenant;
let work: string;

beforeAll(async () => {
  h = await startHarness("e2e_generated_client");
  t = await h.tenant("Generated Client Brand");
  fs.mkdirSync(CACHE, { recursive: true });
  work = fs.mkdtempSync(path.join(CACHE, "generated-client-"));
}, 120_000);
afterAll(async () => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
  await h?.close();
});

/** Generates the types from `input` (a URL or a file) next to a copy of the flow; returns the flow's path. */
function generate(input: string, name: string): string {
  const dir = path.join(work, name);
  fs.mkdirSync(dir);
  execFileSync(CLI, [input, "--output", path.join(dir, "api.d.ts")], { stdio: "pipe" });
  fs.copyFileSync(FLOW, path.join(dir, "flow.ts"));
  return path.join(dir, "flow.ts");
}

/** The compiler's diagnostics for the flow (strict, as the repository compiles). */
function typecheck(file: string): string[] {
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    noUnusedLocals: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.Node16,
    moduleResolution: ts.ModuleResolutionKind.Node16,
    lib: ["lib.es2023.d.ts"],
    types: ["node"],
    skipLibCheck: true,
  });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file
      ? `${path.basename(d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}`
      : "";
    return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`;
  });
}

/** Casts and escapes in the flow: `as`, `<T>x`, `x!`, `any`. */
function castsIn(file: string): string[] {
  const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (
      ts.isAsExpression(node) ||
      ts.isTypeAssertionExpression(node) ||
      ts.isNonNullExpression(node) ||
      node.kind === ts.SyntaxKind.AnyKeyword
    )
      found.push(`${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}: ${node.getText()}`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

it("generates a client from the served document; the integrator flow type-checks with no cast and runs", async () => {
  const flow = generate(`${h.stack.baseUrl}/openapi.json`, "served");
  expect(castsIn(flow)).toEqual([]);
  expect(typecheck(flow)).toEqual([]);

  const r = await integratorFlow(h.stack.baseUrl, t.testKey, t.organizationId);
  expect(r).toMatchObject({
    createdVersion: 1,
    createdStatus: "draft",
    readName: "Organic T-shirt",
    patchedVersion: 2,
    refusal: { code: "precondition_failed", currentVersion: 2 },
    publishedStatus: "published",
  });
  expect(r.refusal.requestId).toMatch(/^req_[0-9a-f]{24}$/);
  expect(r.listPages).toBe(r.listed.length);
  expect(r.listed).toContain(r.id);
  expect(new Set(r.listed).size).toBe(r.listed.length);
  expect(typeof r.feedCursor).toBe("string");

  // The feed is eventually consistent: read it until the flow's three events are in.
  const feedOf = async (): Promise<string[]> =>
    (await h.sdk(t.testKey).organization(t.organizationId).events.list({ limit: 100 }).toArray())
      .filter((e) => e.related.object === "passport" && e.related.id === r.id)
      .map((e) => e.type);
  let types = r.feedTypes;
  for (let i = 0; i < 150 && types.length < 3; i++) {
    await new Promise((res) => setTimeout(res, 100));
    types = await feedOf();
  }
  expect(types).toEqual(["passport.created", "passport.updated", "passport.published"]);
});

it("refuses the same flow when the document lacks a category field it uses", async () => {
  const doc: any = await (await fetch(`${h.stack.baseUrl}/openapi.json`)).json();
  for (const form of ["TextileData", "TextileDataPatch", "TextileDataRead"])
    delete doc.components.schemas[form].properties.material_composition;
  const file = path.join(work, "without-material-composition.json");
  fs.writeFileSync(file, JSON.stringify(doc));
  const problems = typecheck(generate(file, "without-field"));
  expect(problems.length).toBeGreaterThan(0);
  expect(problems.join("\n")).toMatch(/flow\.ts:\d+ .*'material_composition' does not exist/);
});

it("has, for each category, the data component GET /categories/{category}/schema serves", async () => {
  const doc: any = await (await fetch(`${h.stack.baseUrl}/openapi.json`)).json();
  const schemas = doc.components.schemas;
  const mapping: Record<string, string> = schemas.CreatePassportRequest.discriminator.mapping;
  const categories = await h.sdk(t.testKey).categories().toArray();
  expect(Object.keys(mapping).sort()).toEqual(categories.map((c) => c.id).sort());
  for (const c of categories) {
    const create = schemas[mapping[c.id]!.split("/").pop()!];
    const component = schemas[create.properties.data.oneOf[0].$ref.split("/").pop()];
    const served = await h.sdk(t.testKey).categorySchema(c.id);
    const { $schema: _dialect, $id: _id, ...schema } = served.json_schema;
    expect([c.id, component]).toEqual([c.id, schema]);
  }
});
