export { documentsService } from "./service";
export { documentsEnv } from "./config";
