// Builds @dpp/client as integrators install it (docs/decisions/0056-installable-sdk-and-cli.md).
// dist/client/ (at the repository's root) is the root of the published package: a package.json
// written from this package's own (the workspace keeps importing src/ through its TypeScript entry points), README.md,
// CHANGELOG.md, and the same sources compiled twice with their declarations:
//   cjs/  CommonJS (require)    esm/  ES modules (import), relative specifiers with `.js`
// Run: node packages/client/scripts/build.mjs   then: npm pack ./dist/client
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const pkgDir = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");

const root = path.resolve(pkgDir, "../..");
const tsc = path.join(root, "node_modules", ".bin", "tsc");
// Outside the package folder, so that jest and TypeScript never see a second package.json here.
const dist = path.join(root, "dist", "client");
const source = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));

fs.rmSync(dist, { recursive: true, force: true });
const compile = (outDir, module, moduleResolution) =>
  execFileSync(
    tsc,
    [
      "-p",
      "tsconfig.build.json",
      "--outDir",
      outDir,
      "--module",
      module,
      "--moduleResolution",
      moduleResolution,
    ],
    { cwd: pkgDir, stdio: "inherit" },
  );
compile(path.join(dist, "cjs"), "node16", "node16");
compile(path.join(dist, "esm"), "es2022", "bundler");

/** ES modules need the file's extension in a relative specifier: `./core` becomes `./core.js`. */
const withExtension = (spec) => (/\.(js|json)$/.test(spec) ? spec : `${spec}.js`);
function rewriteSpecifiers(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) rewriteSpecifiers(file);
    else if (/\.(js|d\.ts)$/.test(entry.name)) {
      const text = fs.readFileSync(file, "utf8");
      const out = text
        .replace(/(\bfrom\s*["'])(\.\.?\/[^"']+)(["'])/g, (_, a, s, b) => a + withExtension(s) + b)
        .replace(/(\bimport\s*\(\s*["'])(\.\.?\/[^"']+)(["'])/g, (_, a, s, b) => a + withExtension(s) + b)
        .replace(/(\bimport\s*["'])(\.\.?\/[^"']+)(["'])/g, (_, a, s, b) => a + withExtension(s) + b);
      fs.writeFileSync(file, out);
    }
  }
}
rewriteSpecifiers(path.join(dist, "esm"));
fs.writeFileSync(path.join(dist, "esm", "package.json"), JSON.stringify({ type: "module" }) + "\n");
fs.writeFileSync(path.join(dist, "cjs", "package.json"), JSON.stringify({ type: "commonjs" }) + "\n");

for (const [name, spec] of Object.entries(source.dependencies ?? {}))
  if (/^(workspace|file|link):/.test(spec))
    throw new Error(`${name}@${spec}: the published SDK depends on nothing in the workspace`);

const entry = (file) => ({
  import: { types: `./esm/${file}.d.ts`, default: `./esm/${file}.js` },
  require: { types: `./cjs/${file}.d.ts`, default: `./cjs/${file}.js` },
});
const manifest = {
  name: source.name,
  version: source.version,
  description: source.description,
  license: source.license,
  keywords: source.keywords,
  type: "commonjs",
  main: "./cjs/index.js",
  module: "./esm/index.js",
  types: "./cjs/index.d.ts",
  exports: {
    ".": entry("index"),
    "./openapi": entry("openapi.generated"),
    "./package.json": "./package.json",
  },
  sideEffects: false,
  engines: source.engines,
  browserslist: source.browserslist,
  dependencies: source.dependencies,
};
fs.writeFileSync(path.join(dist, "package.json"), JSON.stringify(manifest, null, 2) + "\n");
for (const doc of ["README.md", "CHANGELOG.md"])
  fs.copyFileSync(path.join(pkgDir, doc), path.join(dist, doc));
console.log(`built ${source.name}@${source.version} in ${path.relative(root, dist)}`);
