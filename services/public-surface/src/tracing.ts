import { startTracing } from "@dpp/kit/tracing";

// The first import of main.ts: instrumentation must patch modules before they load.
startTracing("public-surface");
