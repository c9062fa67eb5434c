import type { Migration } from "kysely";
import { init } from "./0001_init";
import { retention } from "./0002_retention";
import { publicJson } from "./0003_public_json";

/** Every migration of the `events` schema, in order (a static map: bundles need no file system). */
export const eventsMigrations: Record<string, Migration> = {
  "0001_init": init,
  "0002_retention": retention,
  "0003_public_json": publicJson,
};
