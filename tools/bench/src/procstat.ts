/**
 * CPU time of processes from /proc/<pid>/stat (Linux): user + system time, in milliseconds. Postgres is the
 * postmaster and every process it started (backends, checkpointer, walwriter, ...): their own time plus the
 * time of their reaped children (cutime, cstime), so a backend that exits between two readings still counts
 * (its time moves into the postmaster's cutime/cstime when the postmaster reaps it).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";

let ticksPerSecond: number | undefined;
function hz(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

interface Stat {
  ppid: number;
  own: number;
  children: number;
}

function readStat(pid: number): Stat | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
  const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // f[0] is field 3 (state): field n is f[n - 3].
  const n = (field: number) => Number(f[field - 3]);
  return { ppid: n(4), own: n(14) + n(15), children: n(16) + n(17) };
}

/** CPU milliseconds used so far by one process (its own threads only). */
export function processCpuMs(pid: number): number {
  const s = readStat(pid);
  return s ? (s.own * 1000) / hz() : 0;
}

/** CPU milliseconds used so far by `root` and every process it started, exited ones included. */
export function treeCpuMs(root: number): number {
  const stats = new Map<number, Stat>();
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const s = readStat(Number(name));
    if (s) stats.set(Number(name), s);
  }
  const rootStat = stats.get(root);
  if (!rootStat) return 0;
  let ticks = rootStat.own + rootStat.children;
  const inTree = new Set([root]);
  // Parents before children is not guaranteed by pid order: repeat until nothing new joins the tree.
  for (let added = true; added;) {
    added = false;
    for (const [pid, s] of stats)
      if (!inTree.has(pid) && inTree.has(s.ppid)) {
        inTree.add(pid);
        ticks += s.own + s.children;
        added = true;
      }
  }
  return (ticks * 1000) / hz();
}
