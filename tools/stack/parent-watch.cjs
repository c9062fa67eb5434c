// Preloaded (--require) into every process the local stack starts: its stdin is a pipe from the
// stack, which closes when the stack's process ends for any reason (Ctrl-C, a crash, SIGKILL, a test
// runner's worker killed mid-hook). The service is then asked to stop as if the stack had stopped it
// (SIGTERM, its graceful shutdown), so no service outlives the stack that started it.
"use strict";
const stdin = process.stdin;
stdin.on("error", () => undefined);
stdin.on("close", () => process.kill(process.pid, "SIGTERM"));
stdin.on("end", () => process.kill(process.pid, "SIGTERM"));
stdin.resume();
// The pipe alone never keeps a process alive (a `migrate` run exits when its work is done).
if (typeof stdin.unref === "function") stdin.unref();
