/**
 * `npm start` stops in order on SIGINT, SIGTERM and SIGHUP: its own shutdown runs to its end (services, portal
 * simulator, Postgres) and the process exits 0, whatever handlers the embedded Postgres library installed.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { REPO_ROOT } from "../src/stack";
import { STOP_SIGNALS } from "../src/signals";

const CHILD = path.join(__dirname, "fixtures", "stop-signal-child.ts");

it.each(STOP_SIGNALS)("runs the stack's own shutdown to its end on %s, and exits 0", async (signal) => {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD], {
    cwd: REPO_ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", () => out.includes("ready") && resolve());
      child.once("exit", (code) => reject(new Error(`the child exited (code ${code}) before it was ready`)));
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.kill(signal);
    expect(await exited).toBe(0);
    expect(out).toContain(`stopped in order after ${signal}`);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
});
