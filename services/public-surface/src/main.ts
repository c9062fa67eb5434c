/**
 *   node --import tsx services/public-surface/src/main.ts migrate   (schema `public_surface`, then exit)
 *   node --import tsx services/public-surface/src/main.ts serve     (the default; runs until stopped)
 */
import "./tracing";
import { runService } from "@dpp/kit";
import { publicSurfaceService } from "./service";

runService(publicSurfaceService);
