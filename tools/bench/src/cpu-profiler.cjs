// Loaded into each service of the full system with `--require` (NODE_OPTIONS) when the benchmark runs with
// --profile. Idle until told: the first SIGUSR2 starts the V8 CPU profiler, the next one stops it and writes
// <BENCH_PROFILE_DIR>/<pid>.<n>.cpuprofile, so a profile covers exactly one round chosen by the runner.
// (node's --cpu-prof would profile the whole life of the process and is not allowed in NODE_OPTIONS.)
const fs = require("node:fs");
const path = require("node:path");
const inspector = require("node:inspector");

const dir = process.env.BENCH_PROFILE_DIR;
if (dir) {
  const session = new inspector.Session();
  session.connect();
  let profiling = false;
  let n = 0;
  process.on("SIGUSR2", () => {
    if (!profiling) {
      profiling = true;
      session.post("Profiler.enable", () => session.post("Profiler.start"));
      return;
    }
    profiling = false;
    session.post("Profiler.stop", (err, result) => {
      if (err) return;
      const file = path.join(dir, `${process.pid}.${++n}.cpuprofile`);
      fs.writeFileSync(`${file}.tmp`, JSON.stringify(result.profile));
      fs.renameSync(`${file}.tmp`, file);
    });
  });
}
