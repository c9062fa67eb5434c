/**
 * How the benchmark starts a Node process of its own (the reference stack, the load generator): the same way
 * tools/stack starts a service (`spawnService` in tools/stack/src/stack.ts: this Node binary with tsx loaded, the
 * TypeScript entry as is). When the services are started another way (compiled JavaScript), change it here
 * only, so the reference keeps paying the same start-up and loader costs as the system it is compared with.
 */
import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";
import path from "node:path";

/** The repository root (tools/bench/src → ../../..). */
export const REPO_ROOT = path.resolve(__dirname, "../../..");

export interface NodeProcessOptions {
  env?: Record<string, string>;
  /** Extra flags for node itself (e.g. --cpu-prof). */
  nodeArgs?: string[];
  stdio?: StdioOptions;
}

export function startNodeProcess(entry: string, args: string[], o: NodeProcessOptions = {}): ChildProcess {
  return spawn(process.execPath, [...(o.nodeArgs ?? []), "--import", "tsx", entry, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...o.env },
    stdio: o.stdio ?? ["ignore", "pipe", "pipe"],
  });
}

export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
export async function stopProcess(child: ChildProcess | undefined, graceMs = 5000): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const killer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited(child);
  clearTimeout(killer);
}
