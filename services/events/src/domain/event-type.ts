/**
 * Event types are `<resource>.<verb>` (passport.created, passport.published,
 * ...): lower-case identifier segments joined by dots, at least two segments.
 */
import { invalidParameter } from "@dpp/contract";

export const EVENT_TYPE_PATTERN = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;
export const MAX_EVENT_TYPE_LENGTH = 100;
/** How many distinct `type` values one feed request may filter on. */
export const MAX_TYPE_FILTERS = 50;

function matchesEventType(value: string): boolean {
  return value.length <= MAX_EVENT_TYPE_LENGTH && EVENT_TYPE_PATTERN.test(value);
}

export function isEventType(value: unknown): value is string {
  return typeof value === "string" && matchesEventType(value);
}

/**
 * Validates the repeatable `type` query parameter and returns it de-duplicated
 * and sorted, so the same set of types always yields the same cursor filters.
 */
export function normalizeTypeFilter(types: readonly string[]): string[] {
  for (const t of types) {
    if (!matchesEventType(t)) {
      throw invalidParameter(
        "type",
        "event_type",
        `type must be an event type of the form <resource>.<verb> (e.g. passport.published); got ${JSON.stringify(
          t.length > MAX_EVENT_TYPE_LENGTH ? `${t.slice(0, MAX_EVENT_TYPE_LENGTH)}...` : t,
        )}.`,
      );
    }
  }
  const unique = [...new Set(types)].sort();
  if (unique.length > MAX_TYPE_FILTERS) {
    throw invalidParameter(
      "type",
      "max_items",
      `At most ${MAX_TYPE_FILTERS} distinct type values may be given.`,
    );
  }
  return unique;
}
