// What CI runs, for the projects a service touches (docs/adding-a-service.md):
//
//   npm run check:service -- <name>
//
// the static checks of CI (generated files, proto lint and breaking check, OpenAPI lint, typecheck, lint:
// `npm run check`), then the jest projects the service touches (its own, kit, tools, gateway) and the e2e
// files that cover every service (the authorization matrix, resilience). Jest runs through `heavy` when the
// machine has it (two machine-wide slots).
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const name = process.argv[2];
const { services } = JSON.parse(fs.readFileSync(path.join(root, "services.json"), "utf8"));
if (!name || !services.some((s) => s.name === name)) {
  console.error(`check:service: give a registered service: npm run check:service -- <name>`);
  process.exit(2);
}

const heavy = spawnSync("sh", ["-c", "command -v heavy"], { encoding: "utf8" }).stdout.trim();
const jest = path.join(root, "node_modules", ".bin", "jest");
const steps = [
  ["static checks (npm run check)", "npm", ["run", "-s", "check"]],
  [`jest: ${name}, kit, tools, gateway`, ...(heavy ? [heavy, [jest]] : [jest, []])],
  ["jest: e2e authorization matrix and resilience", ...(heavy ? [heavy, [jest]] : [jest, []])],
];
steps[1][2] = [...steps[1][2], "--selectProjects", name, "kit", "tools", "gateway"];
steps[2][2] = [...steps[2][2], "--selectProjects", "e2e", "--testPathPatterns", "authz-matrix|resilience"];

const failed = [];
for (const [what, cmd, args] of steps) {
  console.log(`\n== ${what}`);
  try {
    execFileSync(cmd, args, { cwd: root, stdio: "inherit" });
  } catch {
    failed.push(what);
  }
}
console.log(
  failed.length ? `\ncheck:service ${name}: FAILED: ${failed.join("; ")}` : `\ncheck:service ${name}: passed`,
);
process.exit(failed.length ? 1 : 0);
