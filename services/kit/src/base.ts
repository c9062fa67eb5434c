/**
 * @dpp/kit/base: the part of the kit that @dpp/bus is built on: configuration errors and helpers, the logger's
 * type, the database (pools whose statements are prepared, migrations, advisory lock keys), leader jobs and the
 * topic of domain events. None of these modules imports @dpp/bus, which the service template and the outbox
 * relay do: @dpp/bus imports this entry only (eslint.config.mjs), so the two packages load without a cycle.
 */
export { ConfigError, positiveInt } from "./config";
export type { Logger } from "./logger";
export { createDb, lockKey, migrateDatabase } from "./db";
export { backoffMs, startLeaderJob, type LeaderJob } from "./jobs";
export { DOMAIN_EVENTS_TOPIC } from "./events";
