/**
 * The static checks, each one test, so that `npm test` runs them and a failed check counts as one
 * failure in its summary line: every `npm run -s <name>` that `npm run check` chains (generated code
 * current, buf lint, buf breaking, the OpenAPI lint, typecheck, eslint + prettier). A failure shows the
 * check's output.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(__dirname, "../..");
const { scripts } = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as {
  scripts: Record<string, string>;
};
const checks = [...scripts.check.matchAll(/npm run -s ([\w:-]+)/g)].map((m) => m[1]);

function run(name: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("npm", ["run", "-s", name], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, output }));
  });
}

it("npm run check chains the checks run here", () => {
  expect(checks).toEqual(expect.arrayContaining(["check:generated", "typecheck", "lint"]));
});

it.each(checks)(
  "npm run -s %s",
  async (name) => {
    const { code, output } = await run(name);
    if (code !== 0) throw new Error(`npm run -s ${name} failed (exit ${code}):\n${output}`);
  },
  15 * 60_000,
);
