export { filingsService } from "./service";
export { filingsEnv } from "./config";
