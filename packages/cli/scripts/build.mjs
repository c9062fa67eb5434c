// Builds @dpp/cli as integrators install it (docs/decisions/0056-installable-sdk-and-cli.md).
// dist/cli/ (at the repository's root) is the root of the published package: dpp.cjs, one file holding the CLI, the SDK
// (@dpp/client, from its source in this workspace) and the libraries they use, so that the package
// has no dependencies; a package.json with its `bin`; README.md and CHANGELOG.md.
// Run: node packages/cli/scripts/build.mjs   then: npm pack ./dist/cli
import fs from "node:fs";
import path from "node:path";
import { build } from "esbuild";

const pkgDir = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
// Outside the package folder, so that jest and TypeScript never see a second package.json here.
const dist = path.join(path.resolve(pkgDir, "../.."), "dist", "cli");
const source = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));

fs.rmSync(dist, { recursive: true, force: true });
await build({
  entryPoints: [path.join(pkgDir, "src", "main.ts")],
  outfile: path.join(dist, "dpp.cjs"),
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  minifySyntax: true,
  legalComments: "eof",
  banner: { js: "#!/usr/bin/env node" },
  logLevel: "warning",
});
fs.chmodSync(path.join(dist, "dpp.cjs"), 0o755);

const manifest = {
  name: source.name,
  version: source.version,
  description: source.description,
  license: source.license,
  keywords: ["digital product passport", "dpp", "cli"],
  bin: { dpp: "./dpp.cjs" },
  files: ["dpp.cjs", "README.md", "CHANGELOG.md"],
  engines: source.engines,
};
fs.writeFileSync(path.join(dist, "package.json"), JSON.stringify(manifest, null, 2) + "\n");
for (const doc of ["README.md", "CHANGELOG.md"])
  fs.copyFileSync(path.join(pkgDir, doc), path.join(dist, doc));
console.log(
  `built ${source.name}@${source.version} in ${path.relative(path.resolve(pkgDir, "../.."), dist)}`,
);
