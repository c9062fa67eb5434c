/**
 * How the benchmark starts a Node process of its own. The reference stack runs the way tools/stack runs a
 * service: an esbuild bundle made with the image's options (tools/bundle.mjs `serviceBuildOptions`), started
 * with the same node flags as the full system's services (NODE_FLAGS), so both sides pay the same loader,
 * start-up and garbage-collection costs.
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

/**
 * Node's own flags of every measured process, both sides (`--node-flags`): `local`, those of the local stack
 * (SERVICE_NODE_ARGS: young generation of at most 4 MiB per semi-space, for a smaller idle stack); `image`,
 * those of the image and the chart (V8's defaults: up to 16 MiB per semi-space).
 */
export const NODE_FLAGS = { local: SERVICE_NODE_ARGS, image: [] as readonly string[] } as const;
export type NodeFlags = keyof typeof NODE_FLAGS;

export interface NodeProcessOptions {
  env?: Record<string, string>;
  /** Node's own flags (NODE_FLAGS.local when absent; startNodeProcess: none). */
  nodeArgs?: readonly string[];
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

/** Starts a bundle (bundleEntries), with the local stack's node flags unless `o.nodeArgs` says otherwise. */
export function startBundle(bundle: string, args: string[], o: NodeProcessOptions = {}): ChildProcess {
  return spawn(process.execPath, [...(o.nodeArgs ?? NODE_FLAGS.local), bundle, ...args], {
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
