import { startTracing } from "@dpp/kit/src/tracing";

// The first import of main.ts: instrumentation must patch modules before they load.
startTracing("events");
