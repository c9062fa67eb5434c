/**
 * @dpp/contract: what the services agree on with each other and with integrators, with no runtime
 * dependency: the error codes and their HTTP statuses, the event envelope and catalogue, the plans and
 * their limits, and the id format.
 */
export * from "./errors";
export * from "./events";
export * from "./event-catalogue";
export * from "./catalogue/entry";
export * from "./plans";
export * from "./ids";
export * from "./gtin";
export * from "./preview-token";
