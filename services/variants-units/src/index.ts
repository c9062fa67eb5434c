export { variantsUnitsService } from "./service";
export { variantsUnitsEnv } from "./config";
