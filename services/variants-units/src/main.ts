/**
 *   node --import tsx services/variants-units/src/main.ts migrate   (schema `variants_units`, then exit)
 *   node --import tsx services/variants-units/src/main.ts serve     (the default; runs until stopped)
 */
import "./tracing";
import { runService } from "@dpp/kit";
import { variantsUnitsService } from "./service";

runService(variantsUnitsService);
