export { webhooksService } from "./service";
export { webhooksEnv } from "./config";
