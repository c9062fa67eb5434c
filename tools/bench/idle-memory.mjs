// Memory of `npm start` at idle: starts the local stack as a user does (`npm start`,
// embedded Postgres), measures the time until the API answers and until the stack
// prints that it is ready, lets it idle, then prints the resident memory of every
// process of its tree (npm itself, the orchestrator with the services in its threads,
// or every service process with STACK_HOSTING=process, every Postgres process and the
// shell that stops Postgres with the stack) and the totals, and stops it with SIGINT
// to its process group, as Ctrl-C does. It prints figures and asserts nothing.
//
//   node tools/bench/idle-memory.mjs                  this working tree
//   node tools/bench/idle-memory.mjs --clone          a fresh `git clone` of this tree's HEAD in a
//                                                     temporary folder: installs there first (timed
//                                                     apart), then starts; uncommitted changes are not in it
//   node tools/bench/idle-memory.mjs --idle 20        idle seconds before measuring (10)
//   node tools/bench/idle-memory.mjs --ports default  the registry's ports (8080, 50051, 50052) instead
//                                                     of free ones (the default, so that it runs beside
//                                                     another stack)
//   node tools/bench/idle-memory.mjs --clone --ref main   a clone checked out at another revision
//   node tools/bench/idle-memory.mjs --keep-clone     leave the clone in place (its path is printed)
//   node tools/bench/idle-memory.mjs --dir <path>     another working tree (e.g. a kept clone: a warm start)
//   node tools/bench/idle-memory.mjs --hosting process   STACK_HOSTING for the stack (threads, its default,
//                                                     or process: every service its own process)
//
// RSS counts every page a process has resident, including pages it shares with
// others: Postgres' shared buffers are counted once per Postgres process that
// touched them, and the node binary's code once per node process. PSS divides each
// shared page among the processes sharing it; its sum is the memory the tree
// really holds. Both are printed; totals with and without npm's own process.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const known = ["--clone", "--ref", "--idle", "--ports", "--keep-clone", "--dir", "--hosting"];
for (const a of args)
  if (a.startsWith("--") && !known.includes(a)) {
    console.error(`idle-memory: unknown option ${a} (known: ${known.join(", ")})`);
    process.exit(2);
  }
const idleSeconds = Number(opt("--idle", "10"));
const clone = args.includes("--clone");
const defaultPorts = opt("--ports", "free") === "default";

const ms = (t) => `${(t / 1000).toFixed(1)} s`;
const mb = (kb) => (kb / 1024).toFixed(1);

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Every process on the machine: pid → { ppid, pgid, cmd }. */
function processTable() {
  const table = new Map();
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, "utf8");
      // "pid (comm) state ppid pgrp ..."; comm may hold spaces and parentheses.
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
      table.set(Number(d), { ppid: Number(rest[1]), pgid: Number(rest[2]), cmd });
    } catch {
      // The process ended while being read.
    }
  }
  return table;
}

/** The pid and every descendant of it. */
function tree(pid) {
  const table = processTable();
  const out = [pid];
  for (let i = 0; i < out.length; i++)
    for (const [p, info] of table) if (info.ppid === out[i] && !out.includes(p)) out.push(p);
  return out.filter((p) => table.has(p)).map((p) => ({ pid: p, ...table.get(p) }));
}

function memoryOf(pid) {
  const field = (text, name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0);
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    let pss = 0;
    try {
      pss = field(fs.readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"), "Pss");
    } catch {
      pss = NaN;
    }
    return { rss: field(status, "VmRSS"), anon: field(status, "RssAnon"), pss };
  } catch {
    return undefined;
  }
}

const serviceNames = JSON.parse(fs.readFileSync(path.join(root, "services.json"), "utf8")).services.map(
  (s) => s.name,
);

/** A short name for a process of the stack's tree; `threads`: no service runs as a process of its own. */
function label(cmd, threads) {
  if (cmd.startsWith("postgres:")) return cmd.replace(/\s+/g, " ").slice(0, 60);
  if (/(^|\/)postgres( |$)/.test(cmd.split(" ")[0])) return "postgres (postmaster)";
  if (/npm(-cli\.js)? start$/.test(cmd) || /\bnpm start\b/.test(cmd)) return "npm start";
  if (/^(\/bin\/)?(ba)?sh /.test(cmd))
    return cmd.includes("postmaster.pid")
      ? "sh (stops Postgres with the stack)"
      : "sh -c (npm's script shell)";
  // Services first: each is started with tools/stack/parent-watch.cjs preloaded, which names the stack too.
  for (const name of serviceNames)
    if (new RegExp(`services/${name}/|/${name}[./]`).test(cmd)) return `service ${name}`;
  if (/tools\/stack\//.test(cmd) || /\bstack[-.]/.test(cmd) || /\borchestrator\b/.test(cmd))
    return threads ? "stack (orchestrator, services in threads)" : "orchestrator";
  return cmd.slice(0, 60);
}

async function main() {
  let dir = path.resolve(opt("--dir", root));
  let tmp;
  if (clone) {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-idle-"));
    // As root, embedded Postgres runs as the postgres user, who must reach the clone's .dpp.
    fs.chmodSync(tmp, 0o755);
    dir = path.join(tmp, "dpp");
    const ref = opt("--ref", "HEAD");
    const head = execFileSync("git", ["rev-parse", "--short", ref], { cwd: root }).toString().trim();
    console.log(`clone: ${root} (${ref} = ${head}) → ${dir}`);
    execFileSync("git", ["clone", "--quiet", "--no-checkout", root, dir]);
    execFileSync("git", ["checkout", "--quiet", head], { cwd: dir });
    const t0 = Date.now();
    execFileSync("bash", ["tools/bootstrap.sh"], { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
    console.log(`install (tools/bootstrap.sh): ${ms(Date.now() - t0)} (not counted below)`);
  }

  const env = { ...process.env };
  delete env.DATABASE_URL;
  const hosting = opt("--hosting", undefined);
  if (hosting !== undefined) env.STACK_HOSTING = hosting;
  const ports = {};
  for (const s of JSON.parse(fs.readFileSync(path.join(dir, "services.json"), "utf8")).services) {
    const variable = s.kind === "gateway" ? "PORT" : `${s.name.toUpperCase().replace(/-/g, "_")}_PORT`;
    ports[s.name] = defaultPorts ? s.port : await freePort();
    env[variable] = String(ports[s.name]);
  }
  const gatewayPort = ports.gateway;
  const probe = `http://127.0.0.1:${gatewayPort}/v1/categories`;

  const started = Date.now();
  const npm = spawn("npm", ["start"], { cwd: dir, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  let readyAt;
  let exited;
  npm.on("exit", (code, signal) => (exited = signal ?? `code ${code}`));
  const collect = (chunk) => {
    output += chunk;
    if (readyAt === undefined && output.includes("DPP platform is running")) readyAt = Date.now();
  };
  npm.stdout.on("data", collect);
  npm.stderr.on("data", collect);

  const fail = (why) => {
    console.error(`idle-memory: ${why}\n--- output of npm start ---\n${output}`);
    try {
      process.kill(-npm.pid, "SIGKILL");
    } catch {
      // already gone
    }
    process.exit(1);
  };

  let answeredAt;
  while (answeredAt === undefined) {
    if (exited) fail(`npm start exited (${exited}) before the API answered`);
    if (Date.now() - started > 180_000) fail("the API did not answer within 180 s");
    try {
      const res = await fetch(probe, { signal: AbortSignal.timeout(1000) });
      if (res.status === 200) answeredAt = Date.now();
    } catch {
      // not listening yet
    }
    if (answeredAt === undefined) await new Promise((r) => setTimeout(r, 50));
  }
  while (readyAt === undefined) {
    if (exited) fail(`npm start exited (${exited}) before printing that it is ready`);
    if (Date.now() - started > 180_000) fail("no ready line within 180 s");
    await new Promise((r) => setTimeout(r, 50));
  }
  console.log(`API answers (GET ${probe}): ${ms(answeredAt - started)} after \`npm start\``);
  console.log(`ready line printed:        ${ms(readyAt - started)} after \`npm start\``);

  await new Promise((r) => setTimeout(r, idleSeconds * 1000));
  const members = tree(npm.pid);
  const threads = !members.some((p) => label(p.cmd, false).startsWith("service "));
  const procs = members
    .map((p) => ({ ...p, label: label(p.cmd, threads), mem: memoryOf(p.pid) }))
    .filter((p) => p.mem);

  console.log(`\nafter ${idleSeconds} s idle: ${procs.length} processes`);
  const w = Math.max(...procs.map((p) => p.label.length), 10);
  console.log(
    `${"pid".padStart(7)}  ${"process".padEnd(w)}  ${"RSS MB".padStart(7)}  ${"anon MB".padStart(7)}  ${"PSS MB".padStart(7)}`,
  );
  for (const p of procs)
    console.log(
      `${String(p.pid).padStart(7)}  ${p.label.padEnd(w)}  ${mb(p.mem.rss).padStart(7)}  ${mb(p.mem.anon).padStart(7)}  ${mb(p.mem.pss).padStart(7)}`,
    );
  const sum = (list, k) => list.reduce((a, p) => a + p.mem[k], 0);
  const groups = new Map();
  for (const p of procs) {
    const g = p.label.startsWith("postgres") ? "postgres (all processes)" : p.label;
    groups.set(g, [...(groups.get(g) ?? []), p]);
  }
  console.log(`\n${"group".padEnd(w)}  ${"RSS MB".padStart(7)}  ${"PSS MB".padStart(7)}`);
  for (const [g, list] of groups)
    console.log(`${g.padEnd(w)}  ${mb(sum(list, "rss")).padStart(7)}  ${mb(sum(list, "pss")).padStart(7)}`);
  const withoutNpm = procs.filter((p) => p.label !== "npm start");
  console.log(
    `${"total".padEnd(w)}  ${mb(sum(procs, "rss")).padStart(7)}  ${mb(sum(procs, "pss")).padStart(7)}`,
  );
  console.log(
    `${"total without npm".padEnd(w)}  ${mb(sum(withoutNpm, "rss")).padStart(7)}  ${mb(sum(withoutNpm, "pss")).padStart(7)}`,
  );

  // Ctrl-C: SIGINT to the whole foreground process group.
  const stopAt = Date.now();
  process.kill(-npm.pid, "SIGINT");
  const pids = procs.map((p) => p.pid);
  const alive = () => pids.filter((p) => fs.existsSync(`/proc/${p}`));
  while (alive().length > 0 && Date.now() - stopAt < 30_000) await new Promise((r) => setTimeout(r, 100));
  const left = alive();
  if (left.length > 0) {
    console.log(
      `\nstop: ${left.length} processes still running after 30 s (${left.join(", ")}); killing them`,
    );
    for (const p of left) process.kill(p, "SIGKILL");
  } else console.log(`\nstop (SIGINT to the group): every process ended in ${ms(Date.now() - stopAt)}`);

  if (tmp && !args.includes("--keep-clone")) fs.rmSync(tmp, { recursive: true, force: true });
  else if (tmp) console.log(`clone kept at ${dir}`);
}

await main();
