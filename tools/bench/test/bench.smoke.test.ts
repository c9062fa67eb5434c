/**
 * The benchmark runs end to end in its short mode and prints its table: the columns, a row per side of each
 * case, and a throughput ratio for each case. Only the shape of the output is checked, never a figure.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";

const ROOT = path.resolve(__dirname, "../../..");
const COLUMNS = [
  "case",
  "side",
  "req/s",
  "p50 ms",
  "p99 ms",
  "other",
  "gateway",
  "passport",
  "events",
  "public",
  "ref-edge",
  "ref-svc",
  "ref-public",
  "postgres",
  "loadgen",
  "cpu ms/req",
  "txn/req",
  "full/ref",
];

let child: ChildProcess | undefined;

/** The runner and everything it started share its process group: stop them all, even after a failure. */
async function stopAll() {
  const c = child;
  if (!c?.pid || c.exitCode !== null || c.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => c.once("exit", () => resolve()));
  process.kill(-c.pid, "SIGTERM");
  const killer = setTimeout(() => {
    try {
      process.kill(-c.pid!, "SIGKILL");
    } catch {
      // already gone
    }
  }, 20000);
  await gone;
  clearTimeout(killer);
}
afterAll(stopAll, 30000);

test("npm run bench -- --quick prints a side-by-side table with a ratio per case", async () => {
  child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "tools/bench/src/main.ts",
      "--quick",
      "--cases",
      "get,create,resolve,page",
      "--prefill",
      "100",
      "--lag-rates",
      "20",
      "--lag-seconds",
      "1",
      "--webhook-rates",
      "20",
    ],
    { cwd: ROOT, detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (b: Buffer) => (stdout += b.toString()));
  child.stderr!.on("data", (b: Buffer) => (stderr += b.toString()));
  const code = await new Promise<number | null>((resolve) => child!.once("exit", (c) => resolve(c)));
  if (code !== 0) throw new Error(`bench exited with ${code}\n${stderr.slice(-3000)}`);

  const lines = stdout.split("\n");
  expect(lines[0]).toMatch(/^bench \S+ {2}\d+ cores .* node v\d+/);
  const headerAt = lines.findIndex((l) => l.startsWith("case "));
  expect(lines[headerAt]!.trim().split(/\s{2,}/)).toEqual(COLUMNS);

  const rows = lines.slice(headerAt + 1, headerAt + 9).map((l) => l.trim().split(/\s{2,}/));
  expect(rows.map((r) => r[0])).toEqual(["get", "full", "create", "full", "resolve", "full", "page", "full"]);
  for (const full of [rows[1]!, rows[3]!, rows[5]!, rows[7]!]) {
    expect(full).toHaveLength(COLUMNS.length - 1);
    expect(full.at(-1)).toMatch(/^\d+\.\d\d$/);
    expect(full[1]).toMatch(/^\d/);
  }
  // The public surface beside its reference: the resolver's ratio and the page's p99 at a fixed rate.
  expect(stdout).toMatch(/^resolver 307: full\/ref throughput \d+\.\d\d \(target: at least 0\.70/m);
  expect(stdout).toMatch(/^public page at 200 req\/s: ref p99 [\d.]+ ms, full p99 [\d.]+ ms/m);
  expect(stdout).toMatch(
    /^lag\s+target\/s\s+achieved\/s\s+created\s+seen\s+p50 ms\s+p99 ms\s+max ms\s+repeated$/m,
  );
  // The feed's lag and the webhook delivery lag, each with every create seen.
  expect(stdout).toMatch(/^feed\s+20\s+\S+\s+20\s+20\s+\S+\s+\S+\s+\S+$/m);
  expect(stdout).toMatch(/^webhook delivery\s+20\s+\S+\s+20\s+20\s+\S+\s+\S+\s+\S+\s+\d+$/m);
  // The variant batches beside their reference, with when each call's events were in the feed.
  expect(stdout).toMatch(/^POST \.\.\.\/variants \(1000\)\s+[\d.]+\s+[\d.]+\s+\d+\.\d\d\s+[\d.]+$/m);
  expect(stdout).toMatch(/^POST \.\.\.\/variants\/remove \(1000\)\s+[\d.]+\s+[\d.]+\s+\d+\.\d\d\s+[\d.]+$/m);
}, 240_000);
