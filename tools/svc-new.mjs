// Scaffolds a gRPC service (docs/adding-a-service.md):
//
//   npm run svc:new -- <name>       e.g. npm run svc:new -- documents
//
// writes services/<name>/ (definition, main, tracing, config, first migration with the kit's tables, store,
// rpc, harness, trust-boundary and integration tests, README, its gateway module with a list and a keyed
// create route, its OpenAPI operations and authz bodies), its proto (services/<name>/proto/dpp/<schema>/v1/, a module of the buf workspace), its registry
// entry in services.json (the next free port; schema = name with "_"), then links it into the workspace with
// the pinned pnpm (its lockfile block only) and runs the generators. Nothing else is edited by hand; then
// `npm run check:service -- <name>`.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as prettier from "prettier";
import YAML from "yaml";
import { files } from "./scaffold/templates.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const PNPM = "pnpm@10.34.9";
const NAME = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
const RESERVED = new Set(["kit", "contract", "gateway", "proto", "common"]);

function fail(message) {
  console.error(`svc:new: ${message}`);
  process.exit(2);
}

const name = process.argv[2];
if (!name || !NAME.test(name) || RESERVED.has(name))
  fail(
    `give a service name of lower-case words joined by "-" (not ${[...RESERVED].join(", ")}): npm run svc:new -- documents`,
  );
if (fs.existsSync(path.join(root, "services", name))) fail(`services/${name} exists already`);

const registryFile = path.join(root, "services.json");
const registry = JSON.parse(fs.readFileSync(registryFile, "utf8"));
if (registry.services.some((s) => s.name === name)) fail(`${name} is registered already`);

/** The next free gRPC port: above every registered port and every port the chart reserves. */
/** The port the chart's values reserve for this name, or the next one after every registered or reserved port. */
function nextPort() {
  const values = YAML.parse(fs.readFileSync(path.join(root, "charts", "dpp", "values.yaml"), "utf8"));
  const own = values.components[name]?.port;
  if (typeof own === "number") return own;
  const reserved = Object.entries(values.components)
    .filter(([n]) => n !== name)
    .map(([, c]) => c.port);
  const used = [...registry.services.map((s) => s.port), ...reserved].filter((p) => p > 50000);
  return Math.max(50050, ...used) + 1;
}

const words = name.split("-");
const cap = (w) => w[0].toUpperCase() + w.slice(1);
// Its collection: /organizations/{organization}/<plural>, with the key scopes <plural>:read and <plural>:write
// (documents:read, the spec's, when it is one of them; else the service's own, added to the key scopes).
const plural = name.endsWith("s") ? name : `${name}s`;
const oneWords = [...words.slice(0, -1), words[words.length - 1].replace(/s$/, "")];
const camel = words[0] + words.slice(1).map(cap).join("");
const n = {
  name,
  schema: words.join("_"),
  NAME: words.join("_").toUpperCase(),
  Pascal: words.map(cap).join(""),
  camel,
  ns: `${camel}V1`,
  plural,
  one: oneWords.join("_"),
  One: oneWords.map(cap).join(""),
  Ones: plural.split("-").map(cap).join(""),
  ones: camel + (name.endsWith("s") ? "" : "s"),
  Title: plural.split("-").map(cap).join(" "),
  readScope: `${plural}:read`,
  writeScope: `${plural}:write`,
  idPrefix: words.join("").slice(0, 4),
  port: nextPort(),
  clientKey: camel,
};
if (n.Ones === n.One) fail(`the list and the resource of "${name}" would have the same name`);

async function write(file, text) {
  const full = path.join(root, file);
  fs.mkdirSync(path.dirname(full), { recursive: true });
  const options = (await prettier.resolveConfig(full)) ?? {};
  const formatted = file.endsWith(".proto")
    ? text
    : await prettier.format(text, { ...options, filepath: full });
  fs.writeFileSync(full, formatted);
  console.log(`wrote ${file}`);
}

for (const [file, text] of Object.entries(files(n))) await write(file, text);

registry.services.push({
  name,
  kind: "grpc",
  folder: `services/${name}`,
  port: n.port,
  addrEnv: `${n.NAME}_ADDR`,
  protoServices: [`dpp.${n.schema}.v1.${n.Pascal}Service`],
  schema: n.schema,
  gatewayModule: name,
  callers: ["gateway"],
});
await write("services.json", JSON.stringify(registry, null, 2));

const run = (cmd, args) => {
  console.log(`$ ${[cmd, ...args].join(" ")}`);
  execFileSync(cmd, args, { cwd: root, stdio: "inherit", env: { ...process.env, CI: "true" } });
};
// The workspace's settings (pnpm-workspace.yaml) with the pinned pnpm: the lockfile gains the service's
// importer block only (docs/adding-a-service.md, "The lockfile").
run("npm", [
  "exec",
  "--yes",
  `--package=${PNPM}`,
  "--",
  "pnpm",
  "install",
  "--frozen-lockfile=false",
  "--prefer-offline",
]);
// The registry's files first (buf.yaml gains the service's proto module), then the proto's code, then the
// registry's files that read that code (the @dpp/proto namespaces).
run("npm", ["run", "-s", "gen:registry"]);
run("npm", ["run", "-s", "gen"]);
run("npm", ["run", "-s", "gen:registry"]);
run("npm", ["run", "-s", "gen:openapi"]);
console.log(
  `\n${name}: port ${n.port}, schema ${n.schema}, GET and POST /v1/organizations/{organization}/${n.plural} ` +
    `(${n.readScope}, ${n.writeScope}). Next: npm run check:service -- ${name}`,
);
