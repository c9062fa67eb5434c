import type { Migration } from "kysely";

/**
 * None: the public surface keeps no data of its own (it reads the owners over gRPC and caches in memory,
 * docs/decisions/0059-public-surface.md); the template still creates its schema.
 */
export const migrations: Record<string, Migration> = {};
