export { importsService } from "./service";
export { importsEnv } from "./config";
