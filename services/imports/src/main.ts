/**
 *   node --import tsx services/imports/src/main.ts migrate   (schema `imports`, then exit)
 *   node --import tsx services/imports/src/main.ts serve     (the default; runs until stopped)
 */
import "./tracing";
import { runService } from "@dpp/kit";
import { importsService } from "./service";

runService(importsService);
