/**
 * Reads a V8 CPU profile (.cpuprofile, written by cpu-profiler.cjs for one round) and sums self time per
 * function (name and script).
 */
import fs from "node:fs";
import { REPO_ROOT } from "./node-process";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Hotspot {
  name: string;
  selfMs: number;
}

export interface WindowSummary {
  /** Busy time in the window (every sample but "(idle)"). */
  busyMs: number;
  top: Hotspot[];
}

/** A script's place, short: the package path after the last node_modules/, or the path in the repository. */
function where(url: string): string {
  if (!url) return "";
  let p = url.replace(/^file:\/\//, "");
  const nm = p.lastIndexOf("/node_modules/");
  if (nm >= 0) p = p.slice(nm + "/node_modules/".length);
  else if (p.startsWith(REPO_ROOT + "/")) p = p.slice(REPO_ROOT.length + 1);
  return p;
}

export class ProfileFile {
  private readonly nodes = new Map<number, string>();
  private readonly times: number[] = [];
  private readonly durations: number[] = [];
  private readonly sampleNodes: number[];

  constructor(file: string) {
    const p = JSON.parse(fs.readFileSync(file, "utf8")) as CpuProfile;
    for (const n of p.nodes) {
      const f = n.callFrame;
      const place = where(f.url);
      this.nodes.set(
        n.id,
        `${f.functionName || "(anonymous)"}${place ? ` ${place}:${f.lineNumber + 1}` : ""}`,
      );
    }
    let t = p.startTime;
    for (const d of p.timeDeltas) {
      t += d;
      this.times.push(t);
    }
    for (let i = 0; i < this.times.length; i++)
      this.durations.push(i + 1 < this.times.length ? this.times[i + 1]! - this.times[i]! : 0);
    this.sampleNodes = p.samples;
  }

  /** Self time per function, the `topN` largest. */
  summarize(topN: number): WindowSummary {
    const self = new Map<string, number>();
    let busy = 0;
    for (let i = 0; i < this.times.length; i++) {
      const name = this.nodes.get(this.sampleNodes[i]!) ?? "?";
      const ms = this.durations[i]! / 1000;
      if (name.startsWith("(idle)")) continue;
      busy += ms;
      self.set(name, (self.get(name) ?? 0) + ms);
    }
    const top = [...self.entries()]
      .map(([name, selfMs]) => ({ name, selfMs }))
      .sort((a, b) => b.selfMs - a.selfMs)
      .slice(0, topN);
    return { busyMs: busy, top };
  }
}
