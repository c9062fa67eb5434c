export * from "./event-type";
export * from "./domain-event";
export * from "./feed-cursor";
