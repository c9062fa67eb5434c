/**
 * Node's own flags of a service process (hosting.ts): the local stack's (SERVICE_NODE_ARGS) unless the launch names
 * others, as the benchmark does with `--node-flags image`. Each run is a real child process that writes the flags
 * it was started with (process.execArgv) to its log file and ends.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { launch, SERVICE_NODE_ARGS } from "../src/hosting";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-node-args-"));
const PRINT = path.join(dir, "print-exec-argv.js");
fs.writeFileSync(PRINT, `console.log(JSON.stringify(process.execArgv));\n`);

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function execArgvOf(nodeArgs?: readonly string[]): Promise<string[]> {
  const logFile = path.join(dir, `run-${Math.random().toString(36).slice(2)}.log`);
  const unit = launch("process", { name: "passport", bundle: PRINT, args: [], env: {}, logFile, nodeArgs });
  await unit.exited;
  expect(unit.exitCode).toBe(0);
  return JSON.parse(fs.readFileSync(logFile, "utf8").trim()) as string[];
}

describe("a service process's node flags", () => {
  it("are the local stack's when the launch names none", async () => {
    const argv = await execArgvOf();
    expect(SERVICE_NODE_ARGS.length).toBeGreaterThan(0);
    for (const flag of SERVICE_NODE_ARGS) expect(argv).toContain(flag);
  });

  it("are the ones the launch names, in place of the local stack's", async () => {
    const argv = await execArgvOf(["--max-semi-space-size=2"]);
    expect(argv).toContain("--max-semi-space-size=2");
    for (const flag of SERVICE_NODE_ARGS) expect(argv).not.toContain(flag);
  });

  it("are V8's defaults when the launch names an empty list (the image's)", async () => {
    const argv = await execArgvOf([]);
    expect(argv.filter((a) => a.startsWith("--max-semi-space-size"))).toEqual([]);
  });
});
