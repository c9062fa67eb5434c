/**
 *   node --import tsx services/webhooks/src/main.ts migrate   (schema `webhooks`, then exit)
 *   node --import tsx services/webhooks/src/main.ts serve     (the default; runs until stopped)
 */
import "./tracing";
import { runService } from "@dpp/kit";
import { webhooksService } from "./service";

runService(webhooksService);
