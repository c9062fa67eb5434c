import { PgBus, type Bus } from "./bus";
import type { Logger } from "./logger";

export interface BusConfig {
  /** Database holding the bus schema (the Postgres-table transport). */
  BUS_DATABASE_URL?: string;
  DATABASE_URL: string;
}

/** Chooses the bus adapter from configuration. */
export function createBus(config: BusConfig, log: Logger): Bus {
  return new PgBus({ url: config.BUS_DATABASE_URL ?? config.DATABASE_URL, log });
}
