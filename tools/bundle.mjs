// Bundles the entry of every registered service (services.json; its folder's
// src/main.ts) into one self-contained CommonJS file, <folder>/dist/main.js,
// with all workspace code and npm dependencies inlined. The container image
// (deploy/Dockerfile) ships only these bundles: no node_modules at run time.
//
//   node tools/bundle.mjs                 bundle every registered service that has an entry
//   node tools/bundle.mjs gateway events  bundle only the named services
//   node tools/bundle.mjs --strict        fail when a registered service has no entry
//                                         (the image build uses this)
//   node tools/bundle.mjs --meta          also write dist/meta.json (esbuild metafile,
//                                         inspect with https://esbuild.github.io/analyze/)
//
// Decisions (docs/decisions/0003-build-and-deploy.md): platform node, target
// node20 (the image runs Node 22; both must work), format cjs, linked source maps
// without sources content (run with --enable-source-maps, which the image sets).
import * as esbuild from "esbuild";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The registered services, in registry order: { name, folder }. */
const registered = JSON.parse(fs.readFileSync(path.join(root, "services.json"), "utf8")).services;

/**
 * Modules left out of the bundle. They are optional or native add-ons that the
 * code never loads on our paths; bundling them would fail or pull in binaries.
 * - pg-native: pg's optional libpq binding (`require('pg').native`), never used.
 * Add a module here only when esbuild cannot bundle it, and make sure the runtime
 * never requires it (the image has no node_modules).
 */
const EXTERNAL = ["pg-native"];

const args = process.argv.slice(2);
const flags = new Set(args.filter((a) => a.startsWith("--")));
const unknownFlags = [...flags].filter((f) => !["--strict", "--meta"].includes(f));
if (unknownFlags.length > 0) {
  console.error(`bundle: unknown option ${unknownFlags.join(", ")} (known: --strict, --meta)`);
  process.exit(2);
}
const strict = flags.has("--strict");
const requested = args.filter((a) => !a.startsWith("--"));

const folderOf = (name) => path.join(root, registered.find((s) => s.name === name).folder);
const entryOf = (name) => path.join(folderOf(name), "src", "main.ts");

const formatSize = (bytes) =>
  bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(2)} MiB` : `${(bytes / 1024).toFixed(1)} KiB`;

async function bundle(name) {
  const outdir = path.join(folderOf(name), "dist");
  const outfile = path.join(outdir, "main.js");
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [entryOf(name)],
    outfile,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "cjs",
    sourcemap: "linked",
    sourcesContent: false,
    // Class and function names survive (error types and pino's `err.type` read constructor names).
    keepNames: true,
    external: EXTERNAL,
    // Runtime files (an OpenAPI document, SQL, templates) are imported and inlined,
    // never read from disk relative to the source: the image has no source tree.
    loader: { ".yaml": "text", ".yml": "text", ".sql": "text", ".md": "text", ".html": "text" },
    metafile: true,
    logLevel: "warning",
    banner: { js: `// @dpp/${name}: bundled by tools/bundle.mjs; do not edit.` },
  });
  if (flags.has("--meta")) {
    fs.writeFileSync(path.join(outdir, "meta.json"), JSON.stringify(result.metafile));
  }
  const size = fs.statSync(outfile).size;
  const mapSize = fs.statSync(`${outfile}.map`).size;
  const inputs = Object.keys(result.metafile.inputs).length;
  console.log(
    `bundle: ${path.relative(root, outfile)}  ${formatSize(size)}  (map ${formatSize(mapSize)}, ${inputs} inputs` +
      `${result.warnings.length ? `, ${result.warnings.length} warnings` : ""})`,
  );
  return result;
}

async function main() {
  const names = registered.map((s) => s.name);
  const unknown = requested.filter((n) => !names.includes(n));
  if (unknown.length > 0) {
    console.error(
      `bundle: not registered in services.json: ${unknown.join(", ")} (known: ${names.join(", ")})`,
    );
    process.exit(2);
  }
  const wanted = requested.length > 0 ? requested : names;
  const missing = wanted.filter((n) => !fs.existsSync(entryOf(n)));
  for (const name of missing)
    console.log(`bundle: skip ${name}: ${path.relative(root, entryOf(name))} not found`);
  const todo = wanted.filter((n) => !missing.includes(n));
  if (todo.length === 0) console.log("bundle: nothing to bundle");

  const started = Date.now();
  let failed = 0;
  for (const name of todo) {
    try {
      await bundle(name);
    } catch {
      // esbuild has already printed its errors (logLevel "warning").
      console.error(`bundle: ${name} failed`);
      failed += 1;
    }
  }
  console.log(`bundle: ${todo.length - failed}/${todo.length} bundled in ${Date.now() - started} ms`);
  if (failed > 0) process.exit(1);
  if (strict && missing.length > 0) {
    console.error(`bundle: --strict: missing entries for ${missing.join(", ")}`);
    process.exit(1);
  }
}

await main();
