// Type-checks every workspace package on its own (strict, no emit).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const tsc = path.join(root, "node_modules", ".bin", "tsc");
const dirs = ["proto", "test-e2e"];
for (const group of ["services", "packages", "tools"])
  for (const d of fs.readdirSync(path.join(root, group))) dirs.push(`${group}/${d}`);

let failed = 0;
for (const dir of dirs.filter((d) => fs.existsSync(path.join(root, d, "tsconfig.json")))) {
  try {
    execFileSync(tsc, ["--noEmit", "-p", dir], { cwd: root, stdio: "inherit" });
    console.log(`typecheck ok: ${dir}`);
  } catch {
    console.error(`typecheck FAILED: ${dir}`);
    failed++;
  }
}
process.exit(failed ? 1 : 0);
