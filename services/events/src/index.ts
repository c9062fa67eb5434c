export { startEventsService, migrateEvents, type EventsServiceHandle } from "./main";
export { loadEventsConfig, eventsConfigSchema, type EventsConfig } from "./config";
export { eventsMigrations } from "../migrations";
