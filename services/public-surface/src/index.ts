export { publicSurfaceService } from "./service";
export { publicSurfaceEnv } from "./config";
