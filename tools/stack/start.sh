#!/usr/bin/env bash
# The last step of `npm start`: runs the orchestrator of the build just made or checked
# (.dpp/build/current/stack.js), which runs every service in a worker thread of its own
# process (STACK_HOSTING=threads, the default) or as a process of its own (process). It
# replaces this shell (and npm's script shell, which runs it with `exec`): Ctrl-C, and a
# SIGTERM that npm passes on, reach the orchestrator itself.
#
# Options measured to keep the stack small at idle (docs/decisions/0027-local-stack-in-threads.md;
# node tools/bench/idle-memory.mjs), each harmless for one developer's stack:
#   --max-semi-space-size=1   a young generation of 1 MiB per semi-space in every thread (V8 flags
#                             are the process's: every thread has it); V8 grows it to 16 MiB
#   --optimize-for-size       V8 favours memory over speed (smaller heaps, more GC)
#   MALLOC_ARENA_MAX=2        glibc gives each thread a malloc arena of its own: at most two
#   MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_
#                             fixed at 128 KiB: what the startup (parsing and compiling every
#                             bundle) allocated and freed goes back to the system
set -euo pipefail
cd "$(dirname "$0")/../.."
export MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 MALLOC_TRIM_THRESHOLD_=131072
exec node --max-semi-space-size=1 --optimize-for-size .dpp/build/current/stack.js
