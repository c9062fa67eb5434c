export { eventsService } from "./service";
export { eventsEnv } from "./config";
export { eventsMigrations } from "../migrations";
