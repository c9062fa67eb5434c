/**
 *   node --import tsx services/documents/src/main.ts migrate   (schema `documents`, then exit)
 *   node --import tsx services/documents/src/main.ts serve     (the default; runs until stopped)
 */
import "./tracing";
import { runService } from "@dpp/kit";
import { documentsService } from "./service";

runService(documentsService);
