/**
 *   node --import tsx services/events/src/main.ts migrate   (schema `events` + bus tables, then exit)
 *   node --import tsx services/events/src/main.ts serve     (the default; runs until SIGTERM)
 */
import "./tracing";
import { runService } from "@dpp/kit";
import { eventsService } from "./service";

runService(eventsService);
