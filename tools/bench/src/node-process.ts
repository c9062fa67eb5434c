/**
 * How the benchmark starts a Node process of its own. The reference stack runs the way tools/stack runs a
 * service: an esbuild bundle made with the image's options (tools/bundle.mjs `serviceBuildOptions`), started
 * with the services' node flags (SERVICE_NODE_ARGS), so both sides pay the same loader and start-up costs.
 * The load generator is not measured and runs from source under tsx.
 */
import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";
import path from "node:path";
import { SERVICE_NODE_ARGS } from "@dpp/stack";

/** The repository root (tools/bench/src → ../../..). */
export const REPO_ROOT = path.resolve(__dirname, "../../..");

/**
 * Where the reference's bundles go: inside this package, so that the packages left outside a bundle
 * (tools/bundle.mjs EXTERNAL and INSTRUMENTED: pg, grpc-js, express) resolve from its node_modules.
 */
const BUILD_DIR = path.join(REPO_ROOT, "tools", "bench", "node_modules", ".cache", "bench-build");

export interface NodeProcessOptions {
  env?: Record<string, string>;
  /** Extra flags for node itself (e.g. --require of a profiler). */
  nodeArgs?: string[];
  stdio?: StdioOptions;
}

/** Bundles each TypeScript entry (name → source) as a service is bundled; resolves to name → bundle. */
export async function bundleEntries(entries: Record<string, string>): Promise<Record<string, string>> {
  const esbuild = await import("esbuild");
  const { serviceBuildOptions } = (await import(path.join(REPO_ROOT, "tools", "bundle.mjs"))) as {
    serviceBuildOptions: (name: string, entry: string, outfile: string) => Record<string, unknown>;
  };
  const out: Record<string, string> = {};
  await Promise.all(
    Object.entries(entries).map(async ([name, entry]) => {
      const outfile = path.join(BUILD_DIR, `${name}.js`);
      await esbuild.build({
        ...serviceBuildOptions(`bench-${name}`, entry, outfile),
        sourcemap: false,
      } as Parameters<typeof esbuild.build>[0]);
      out[name] = outfile;
    }),
  );
  return out;
}

/** Starts a bundle (bundleEntries) with the services' node flags. */
export function startBundle(bundle: string, args: string[], o: NodeProcessOptions = {}): ChildProcess {
  return spawn(process.execPath, [...SERVICE_NODE_ARGS, ...(o.nodeArgs ?? []), bundle, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...o.env },
    stdio: o.stdio ?? ["ignore", "pipe", "pipe"],
  });
}

/** Starts a TypeScript entry from source (tsx): for the benchmark's own tools, never measured. */
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
