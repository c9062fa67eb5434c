// Fails when generated code is not what its source makes today:
// - proto/src/gen from the buf workspace (buf.yaml: proto/ and each service's proto/; `buf generate`; fix
//   with `npm run gen`);
// - what is made of services/gateway/openapi/openapi.yaml: its category components (from the
//   category registry), the gateway's modules and the SDK's types (tools/gen-openapi.mjs; fix with
//   `npm run -s gen:openapi`);
// - deploy/compose.yaml and tools/registry/names.generated.ts from services.json
//   (tools/gen-registry.mjs; fix with `npm run -s gen:registry`).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { staleFiles as staleOpenApiFiles } from "./gen-openapi.mjs";
import { staleFiles as staleRegistryFiles } from "./gen-registry.mjs";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const committed = path.join(root, "proto", "src", "gen");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-gen-"));

const buf = path.join(root, "node_modules", ".bin", "buf");
execFileSync(buf, ["generate", "--output", tmp], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, PATH: `${path.join(root, "node_modules", ".bin")}:${process.env.PATH}` },
});
const fresh = path.join(tmp, "proto", "src", "gen");

function files(dir, base = dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? files(p, base) : [path.relative(base, p)];
  });
}

const a = new Set(files(committed));
const b = new Set(files(fresh));
const problems = [];
for (const f of b) if (!a.has(f)) problems.push(`missing: proto/src/gen/${f}`);
for (const f of a) if (!b.has(f)) problems.push(`stale (no longer generated): proto/src/gen/${f}`);
for (const f of a)
  if (
    b.has(f) &&
    fs.readFileSync(path.join(committed, f), "utf8") !== fs.readFileSync(path.join(fresh, f), "utf8")
  )
    problems.push(`out of date: proto/src/gen/${f}`);
fs.rmSync(tmp, { recursive: true, force: true });

const openapiStale = await staleOpenApiFiles();
const registryStale = await staleRegistryFiles();

if (problems.length)
  console.error(`Generated code is stale; run \`pnpm run gen\` and commit:\n  ${problems.join("\n  ")}`);
if (openapiStale.length)
  console.error(
    `Files generated from the OpenAPI document are stale; run \`npm run -s gen:openapi\` and commit:\n  ${openapiStale
      .map((f) => `out of date: ${f}`)
      .join("\n  ")}`,
  );
if (registryStale.length)
  console.error(
    `Files generated from services.json are stale; run \`npm run -s gen:registry\` and commit:\n  ${registryStale
      .map((f) => `out of date: ${f}`)
      .join("\n  ")}`,
  );
if (problems.length || openapiStale.length || registryStale.length) process.exit(1);
console.log(
  `Generated code is current (${a.size} proto files, the files made from the OpenAPI document and from services.json).`,
);
