/**
 * The bundles' keepNames helper (tools/bundle.mjs, fastKeepNames): names survive bundling as esbuild's own helper
 * keeps them, and a closure that already has its name is left as it is. A real esbuild build of a small program
 * with the services' options, run in a child process (tools/bundle.mjs is an ES module).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const root = path.resolve(__dirname, "..", "..", "..");
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-keep-names-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

// Two modules that both declare a class Deferred: esbuild renames one of them (Deferred2) in the bundle.
fs.writeFileSync(path.join(dir, "a.ts"), `export class Deferred { kind = "a"; }\n`);
fs.writeFileSync(path.join(dir, "b.ts"), `export class Deferred { kind = "b"; }\n`);
fs.writeFileSync(
  path.join(dir, "entry.ts"),
  `import { Deferred as A } from "./a";
import { Deferred as B } from "./b";
export function handler() {
  const run = async () => 1;
  const fail = (err: unknown) => err;
  return { run, fail };
}
export const names = () => {
  const h = handler();
  const d = Object.getOwnPropertyDescriptor(h.run, "name");
  return {
    classes: [A.name, B.name, new A().constructor.name, new B().constructor.name],
    closures: [h.run.name, h.fail.name],
    runName: { writable: d?.writable, enumerable: d?.enumerable, configurable: d?.configurable },
    fresh: handler().run !== h.run,
  };
};
`,
);

function build(): { names: unknown; helperLine: string; plain: unknown } {
  const script = `
    import fs from "node:fs";
    import { createRequire } from "node:module";
    import * as esbuild from "esbuild";
    import { serviceBuildOptions, fastKeepNames } from ${JSON.stringify(path.join(root, "tools", "bundle.mjs"))};
    const out = ${JSON.stringify(path.join(dir, "out.js"))};
    await esbuild.build({ ...serviceBuildOptions("test", ${JSON.stringify(path.join(dir, "entry.ts"))}, out), logLevel: "silent" });
    const require = createRequire(import.meta.url);
    const plain = require(out).names();
    fastKeepNames(out);
    const text = fs.readFileSync(out, "utf8");
    const helperLine = text.split("\\n").find((l) => l.startsWith("var __name"));
    let again;
    try { fastKeepNames(out); } catch (err) { again = err.message; }
    delete require.cache[out];
    console.log(JSON.stringify({ names: require(out).names(), helperLine, plain, again }));
  `;
  const stdout = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
    cwd: path.join(root, "tools", "stack"),
    encoding: "utf8",
  });
  return JSON.parse(stdout) as { names: unknown; helperLine: string; plain: unknown };
}

describe("fastKeepNames", () => {
  it("keeps every name esbuild's helper keeps, with the same property, and skips names already right", () => {
    const { names, helperLine, plain, again } = build() as ReturnType<typeof build> & { again: string };
    expect(helperLine).toContain("target.name === value ? target :");
    // The same names as the bundle with esbuild's own helper: the renamed class still reads Deferred.
    expect(names).toEqual(plain);
    expect(names).toEqual({
      classes: ["Deferred", "Deferred", "Deferred", "Deferred"],
      closures: ["run", "fail"],
      runName: { writable: false, enumerable: false, configurable: true },
      fresh: true,
    });
    // A bundle whose helper is not esbuild's (here: already replaced) fails instead of shipping unnoticed.
    expect(again).toMatch(/keepNames helper is not written as tools\/bundle.mjs expects it/);
  });
});
