/**
 * How the local stack runs a service's bundle (`serve`, `migrate`): as a child process of the stack's process
 * (`process`: what the e2e harness and the benchmark use, production-like, each service with its own CPU
 * figures), or in a worker thread of it (`threads`: what `npm start` uses by default, one Node process for the
 * whole stack; docs/decisions/0027-local-stack-in-threads.md). Either is a Unit to the rest of the stack:
 * started, stopped as by SIGTERM, killed, watched until it exits.
 *
 * A thread gets its own environment (the Worker's `env`), its own arguments, its own log file (LOG_FILE: the
 * kit's logger appends to it; anything else the thread writes to its stdout or stderr is appended by this
 * process, and an uncaught error is written there before the thread ends) and its own ports. It is stopped by
 * the kit's SHUTDOWN_MESSAGE (signals reach only the main thread) and ends with the process, whatever ends it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { SHUTDOWN_MESSAGE } from "@dpp/kit/internal";
import { REPO_ROOT } from "../../registry";

export type Hosting = "process" | "threads";

export const HOSTINGS: readonly Hosting[] = ["process", "threads"];

/** STACK_HOSTING of `npm start`: `threads` (the default) or `process`. */
export function hostingFromEnv(env: NodeJS.ProcessEnv): Hosting {
  const value = env.STACK_HOSTING ?? "";
  if (value === "") return "threads";
  if ((HOSTINGS as readonly string[]).includes(value)) return value as Hosting;
  throw new Error(`STACK_HOSTING must be "threads" or "process", got "${value}"`);
}

/** One run of a bundle: a child process or a worker thread. */
export interface Unit {
  readonly hosting: Hosting;
  /** The child process (process hosting). */
  readonly process?: ChildProcess;
  /** The worker (threads hosting). */
  readonly worker?: Worker;
  /** The process it runs in: the child's pid, or this process's for a thread. */
  readonly pid: number | undefined;
  /** The thread's id (threads hosting). */
  readonly threadId?: number;
  /** How it ended ("code 1", "SIGKILL", "terminated"); undefined while it runs. */
  readonly exit: string | undefined;
  /** Its exit code (null while it runs, or when a signal ended the process). */
  readonly exitCode: number | null;
  /** Resolves when it has ended. */
  readonly exited: Promise<void>;
  /** "pid 123" or "thread 2". */
  readonly id: string;
  /** Stops it as SIGTERM does (a thread: SHUTDOWN_MESSAGE), forced after graceMs (SIGKILL, terminate()). */
  stop(graceMs: number): Promise<void>;
  /**
   * Ends it and waits: a signal to a process (SIGKILL by default: a crash, no cleanup); a thread is terminated
   * (SIGKILL) or asked to stop (SIGTERM, SIGINT), and takes no other signal.
   */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export interface LaunchOptions {
  /** What the run is called in its log (the service's name). */
  name: string;
  bundle: string;
  args: string[];
  /** Variables over this process's environment. */
  env: Record<string, string>;
  /** Where the run writes its output (appended); undefined → this process's stdout and stderr. */
  logFile?: string;
  /** Node's own flags of a service process (SERVICE_NODE_ARGS when absent); a thread takes its process's. */
  nodeArgs?: readonly string[];
}

export function launch(hosting: Hosting, o: LaunchOptions): Unit {
  return hosting === "process" ? launchProcess(o) : launchThread(o);
}

/**
 * Node options of every service process: a young generation of at most 4 MiB per semi-space (V8 grows it
 * to 16 MiB by default) keeps an idle service several MiB smaller. No --enable-source-maps (the image sets
 * it): the first stack trace it maps keeps the decoded map of the whole bundle, about 60 MiB, for the
 * process's life. Traces name lines of the bundle, whose `// <source file>` comments say where they are.
 */
export const SERVICE_NODE_ARGS: readonly string[] = ["--max-semi-space-size=4"];

/** Preloaded into every service process: it stops when the process that started it is gone. */
const PARENT_WATCH = path.join(REPO_ROOT, "tools", "stack", "parent-watch.cjs");

function launchProcess(o: LaunchOptions): Unit {
  // The child writes to the log file itself (its own descriptor), or to this process's stdout and stderr.
  let fd: number | undefined;
  if (o.logFile) {
    fs.mkdirSync(path.dirname(o.logFile), { recursive: true });
    fd = fs.openSync(o.logFile, "a");
  }
  let child: ChildProcess;
  try {
    // stdin is a pipe that only closes when this process ends: PARENT_WATCH stops the child then.
    child = spawn(
      process.execPath,
      [...(o.nodeArgs ?? SERVICE_NODE_ARGS), "--require", PARENT_WATCH, o.bundle, ...o.args],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, ...o.env },
        stdio: fd === undefined ? ["pipe", "inherit", "inherit"] : ["pipe", fd, fd],
      },
    );
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
  const ended = () => child.exitCode !== null || child.signalCode !== null;
  const exited = ended() ? Promise.resolve() : new Promise<void>((r) => child.once("exit", () => r()));
  return {
    hosting: "process",
    process: child,
    pid: child.pid,
    get exit() {
      return ended() ? (child.signalCode ?? `code ${child.exitCode}`) : undefined;
    },
    get exitCode() {
      return child.exitCode;
    },
    exited,
    id: `pid ${child.pid ?? "?"}`,
    stop: async (graceMs) => {
      if (ended()) return;
      child.kill("SIGTERM");
      const killer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(killer);
    },
    kill: async (signal = "SIGKILL") => {
      if (ended()) return;
      child.kill(signal);
      await exited;
    },
  };
}

function launchThread(o: LaunchOptions): Unit {
  const env: Record<string, string | undefined> = { ...process.env, ...o.env };
  if (o.logFile) {
    fs.mkdirSync(path.dirname(o.logFile), { recursive: true });
    env.LOG_FILE = o.logFile;
  }
  const worker = new Worker(o.bundle, {
    argv: o.args,
    env,
    // With a log file, what the thread writes to its stdout and stderr (not its log lines: those go to the
    // file directly) is appended to the file here; without, it reaches this process's stdout and stderr.
    stdout: o.logFile !== undefined,
    stderr: o.logFile !== undefined,
  });
  const threadId = worker.threadId;
  const out = o.logFile ? fs.createWriteStream(o.logFile, { flags: "a" }) : undefined;
  if (out) {
    out.on("error", () => undefined);
    worker.stdout.pipe(out, { end: false });
    worker.stderr.pipe(out, { end: false });
  }
  let code: number | null = null;
  let exit: string | undefined;
  let terminated = false;
  const exited = new Promise<void>((resolve) =>
    worker.once("exit", (c) => {
      code = c;
      exit = terminated ? "terminated" : `code ${c}`;
      if (out) out.end(resolve);
      else resolve();
    }),
  );
  // An uncaught error ends the thread (exit code 1); it could not write it itself.
  worker.on("error", (err: unknown) => {
    const text = `${new Date().toISOString()} ${o.name} (thread ${threadId}) failed: ${
      err instanceof Error ? (err.stack ?? err.message) : String(err)
    }\n`;
    if (out) out.write(text);
    else process.stderr.write(text);
  });
  const terminate = async () => {
    if (exit !== undefined) return;
    terminated = true;
    await worker.terminate();
    await exited;
  };
  const ask = () => {
    if (exit === undefined) worker.postMessage(SHUTDOWN_MESSAGE);
  };
  return {
    hosting: "threads",
    worker,
    pid: process.pid,
    threadId,
    get exit() {
      return exit;
    },
    get exitCode() {
      return code;
    },
    exited,
    id: `thread ${threadId}`,
    stop: async (graceMs) => {
      if (exit !== undefined) return;
      ask();
      const killer = setTimeout(() => void terminate(), graceMs);
      await exited;
      clearTimeout(killer);
    },
    kill: async (signal = "SIGKILL") => {
      if (signal === "SIGKILL") return terminate();
      if (signal !== "SIGTERM" && signal !== "SIGINT")
        throw new Error(
          `${o.name} runs in a thread: it can be sent SIGKILL, SIGTERM or SIGINT, not ${signal}`,
        );
      ask();
      await exited;
    },
  };
}
