// Bundles the entry of every registered service (services.json; its folder's
// src/main.ts) into one CommonJS file, <folder>/dist/main.js, with all
// workspace code and npm dependencies inlined except the modules OpenTelemetry
// instruments (INSTRUMENTED below): those stay `require`d at run time, so that
// the instrumentations, which patch a module when it is required, see them,
// and are copied with their own dependencies into <folder>/dist/node_modules.
// The container image (deploy/Dockerfile) ships dist/ as it is.
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
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The registered services, in registry order: { name, folder }. */
const registered = JSON.parse(fs.readFileSync(path.join(root, "services.json"), "utf8")).services;

/**
 * Modules left out of the bundle. They are optional or native add-ons that the
 * code never loads on our paths; bundling them would fail or pull in binaries.
 * - pg-native: pg's optional libpq binding (`require('pg').native`), never used.
 * Add a module here only when esbuild cannot bundle it, and make sure the runtime
 * never requires it (the image ships no other node_modules than INSTRUMENTED).
 */
export const EXTERNAL = ["pg-native"];

/**
 * Modules the OpenTelemetry instrumentations of services/kit/src/tracing.ts
 * patch when they are required (grpc, pg, express, ioredis, kafkajs, pino; http
 * is built in). Inlined into the bundle they would never be required, and the
 * image's traces would hold only HTTP spans. Each one the service imports is
 * left out of the bundle and shipped in dist/node_modules.
 */
export const INSTRUMENTED = ["@grpc/grpc-js", "pg", "express", "ioredis", "kafkajs", "pino"];

/**
 * The esbuild options of a service's bundle: those of the image, and of the local stack's
 * build (tools/stack/build.mjs), which writes elsewhere.
 */
export function serviceBuildOptions(name, entry, outfile) {
  return {
    absWorkingDir: root,
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "cjs",
    sourcemap: "linked",
    sourcesContent: false,
    // Class and function names survive (error types and pino's `err.type` read constructor names).
    keepNames: true,
    external: [...EXTERNAL, ...INSTRUMENTED],
    // Runtime files (an OpenAPI document, SQL, templates) are imported and inlined,
    // never read from disk relative to the source: the image has no source tree.
    loader: { ".yaml": "text", ".yml": "text", ".sql": "text", ".md": "text", ".html": "text" },
    metafile: true,
    logLevel: "warning",
    banner: { js: `// @dpp/${name}: bundled by tools/bundle.mjs; do not edit.` },
  };
}

/**
 * esbuild's `keepNames` helper, as it writes it at the top of a bundle, and what it becomes. keepNames calls the
 * helper on every named function and class, also on each closure a function makes each time it runs (a handler's
 * `const run = async () => ...`), where it redefines a `name` the closure already has: a runtime call and a
 * change of the closure's hidden class, on every request. The helper leaves a function whose name is already
 * the one to keep as it is (the same property, with the same attributes, either way) and renames the rest as
 * before (a class esbuild renamed to avoid a clash, `Deferred2`, still reads `Deferred`).
 */
export const KEEP_NAMES_HELPER = `var __name = (target, value) => __defProp(target, "name", { value, configurable: true });`;
export const KEEP_NAMES_HELPER_FAST = `var __name = (target, value) => target.name === value ? target : __defProp(target, "name", { value, configurable: true });`;

/**
 * Puts KEEP_NAMES_HELPER_FAST in place of esbuild's helper in a bundle written with serviceBuildOptions. A bundle
 * without the helper as expected (another esbuild) fails the build rather than ship unnoticed.
 */
export function fastKeepNames(file) {
  const text = fs.readFileSync(file, "utf8");
  const at = text.indexOf(KEEP_NAMES_HELPER);
  if (at < 0 || text.indexOf(KEEP_NAMES_HELPER, at + 1) >= 0) {
    throw new Error(`${file}: esbuild's keepNames helper is not written as tools/bundle.mjs expects it`);
  }
  fs.writeFileSync(
    file,
    text.slice(0, at) + KEEP_NAMES_HELPER_FAST + text.slice(at + KEEP_NAMES_HELPER.length),
  );
}

/** Run as a command; imported (tools/stack/build.mjs), the module only provides the options above. */
const asCommand =
  process.argv[1] !== undefined && import.meta.url === pathToFileURL(fs.realpathSync(process.argv[1])).href;
const args = asCommand ? process.argv.slice(2) : [];
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
  const result = await esbuild.build(serviceBuildOptions(name, entryOf(name), outfile));
  fastKeepNames(outfile);
  if (flags.has("--meta")) {
    fs.writeFileSync(path.join(outdir, "meta.json"), JSON.stringify(result.metafile));
  }
  const shipped = shipInstrumented(name, result.metafile, outdir);
  const size = fs.statSync(outfile).size;
  const mapSize = fs.statSync(`${outfile}.map`).size;
  const inputs = Object.keys(result.metafile.inputs).length;
  console.log(
    `bundle: ${path.relative(root, outfile)}  ${formatSize(size)}  (map ${formatSize(mapSize)}, ${inputs} inputs` +
      `${result.warnings.length ? `, ${result.warnings.length} warnings` : ""})` +
      `; node_modules: ${shipped.join(", ") || "none"}`,
  );
  return result;
}

/** The package directory a name resolves to from `fromDir` (pnpm: a symlink into node_modules/.pnpm), real path. */
export function packageDir(name, fromDir) {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, "node_modules", name);
    if (fs.existsSync(path.join(candidate, "package.json"))) return fs.realpathSync(candidate);
    if (dir === path.dirname(dir)) return undefined;
  }
}

/**
 * Copies the instrumented modules the bundle requires, and their production
 * dependencies, into dist/node_modules: flat, except a second version of a
 * package, which goes into the node_modules of the package that needs it.
 */
function shipInstrumented(name, metafile, outdir) {
  // Each instrumented module the bundle requires, resolved from a workspace file that imports it
  // (the services' own pinned versions), else from the first dependency that does.
  const required = new Map();
  const importers = Object.entries(metafile.inputs).sort(
    ([a], [b]) => Number(a.includes("node_modules")) - Number(b.includes("node_modules")),
  );
  for (const [file, input] of importers)
    for (const imp of input.imports)
      if (imp.external && INSTRUMENTED.includes(imp.path) && !required.has(imp.path))
        required.set(imp.path, path.dirname(path.join(root, file)));
  const target = path.join(outdir, "node_modules");
  fs.rmSync(target, { recursive: true, force: true });
  const placed = new Map(); // package name -> real dir placed at the top level
  const queue = [...required].map(([dep, from]) => ({ dep, from, into: target }));
  while (queue.length > 0) {
    const { dep, from, into } = queue.shift();
    const real = packageDir(dep, from);
    if (!real) throw new Error(`bundle: ${dep} (needed by ${from}) is not installed`);
    let dest;
    if (!placed.has(dep)) {
      placed.set(dep, real);
      dest = path.join(target, dep);
    } else if (placed.get(dep) === real) continue;
    else dest = path.join(into, dep);
    if (fs.existsSync(dest)) continue;
    fs.cpSync(real, dest, { recursive: true, dereference: true });
    const pkg = JSON.parse(fs.readFileSync(path.join(real, "package.json"), "utf8"));
    const deps = { ...pkg.dependencies, ...pkg.optionalDependencies };
    for (const d of Object.keys(deps)) {
      // Optional dependencies that are not installed (pg-native, platform binaries) are never loaded here.
      if (!packageDir(d, real) && pkg.optionalDependencies?.[d]) continue;
      queue.push({ dep: d, from: real, into: path.join(dest, "node_modules") });
    }
  }
  return [...required.keys()];
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
    } catch (err) {
      // esbuild has already printed its own errors (logLevel "warning"); others are printed here.
      if (!err?.errors) console.error(err);
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

if (asCommand) await main();
