/** The `dpp` executable: runs the CLI with this process's streams, signals and environment. */
import { run } from "./cli";

const controller = new AbortController();
let stops = 0;
for (const sig of ["SIGINT", "SIGTERM"] as const)
  process.on(sig, () => {
    // The first Ctrl-C ends tail or listen cleanly; a second one ends the process at once.
    if (++stops > 1) process.exit(130);
    controller.abort();
  });

// A reader that went away (`dpp events tail | head -n 1`) ends the command quietly, as other command-line tools
// do, instead of an unhandled EPIPE: tail and listen stop, their cursor already saved.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code !== "EPIPE") throw err;
  controller.abort();
  process.exit(process.exitCode ?? 0);
});

const readStdin = async () => {
  const parts: Buffer[] = [];
  for await (const c of process.stdin) parts.push(c as Buffer);
  return Buffer.concat(parts).toString("utf8");
};

run(
  process.argv.slice(2),
  {
    out: (text) => void process.stdout.write(text + "\n"),
    err: (text) => void process.stderr.write(text + "\n"),
    stdoutIsTTY: Boolean(process.stdout.isTTY),
    stderrIsTTY: Boolean(process.stderr.isTTY),
    readStdin,
    signal: controller.signal,
  },
  process.env,
).then(
  (code) => {
    process.exitCode = code;
    // A fetch keep-alive socket must not hold the process open once the command is done.
    setImmediate(() => process.exit(code));
  },
  (err: unknown) => {
    process.stderr.write(`${String(err)}\n`);
    process.exit(1);
  },
);
