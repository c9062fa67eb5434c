/**
 *   node --import tsx services/filings/src/main.ts migrate   (schema `filings`, then exit)
 *   node --import tsx services/filings/src/main.ts serve     (the default; runs until stopped)
 */
import "./tracing";
import { runService } from "@dpp/kit";
import { filingsService } from "./service";

runService(filingsService);
