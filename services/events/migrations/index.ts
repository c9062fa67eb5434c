import type { Migration } from "kysely";
import { init } from "./0001_init";

/** Every migration of the `events` schema, in order (a static map: bundles need no file system). */
export const eventsMigrations: Record<string, Migration> = {
  "0001_init": init,
};
