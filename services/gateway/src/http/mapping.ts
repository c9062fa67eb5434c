/**
 * The one place where protobuf messages become the public JSON shapes
 * (snake_case, nulls, resource names). Never send a message to express as is.
 */
import type { eventsV1, passportV1 } from "@dpp/proto";

const parseJson = (text: string, fallback: unknown = {}) => (text ? JSON.parse(text) : fallback);
const orNull = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

export function list<T>(data: T[], hasMore: boolean, nextCursor: string | null) {
  return { object: "list" as const, data, has_more: hasMore, next_cursor: nextCursor };
}

export function passportJson(p: passportV1.Passport) {
  return {
    object: "passport" as const,
    id: p.id,
    name: `organizations/${p.organizationId}/passports/${p.id}`,
    organization_id: p.organizationId,
    category: p.category,
    status: p.status,
    gtin: orNull(p.gtin),
    serial_number: orNull(p.serialNumber),
    external_id: orNull(p.externalId),
    version: p.version,
    livemode: p.livemode,
    registry_id: orNull(p.registryId),
    created_at: p.createdAt,
    updated_at: p.updatedAt,
    published_at: orNull(p.publishedAt),
    trashed_at: orNull(p.trashedAt),
    data: parseJson(p.dataJson),
  };
}

export function categoryJson(c: passportV1.Category) {
  return {
    object: "category" as const,
    id: c.id,
    name: `categories/${c.id}`,
    display_name: c.displayName,
    description: c.description,
    schema_version: c.schemaVersion,
    regulations: c.regulations,
  };
}

export function categorySchemaJson(c: passportV1.Category, schemaJson: string) {
  return {
    object: "category_schema" as const,
    id: c.id,
    name: `categories/${c.id}/schema`,
    category: c.id,
    schema_version: c.schemaVersion,
    json_schema: parseJson(schemaJson),
  };
}

export function eventJson(e: eventsV1.Event) {
  return {
    object: "event" as const,
    id: e.id,
    name: `organizations/${e.organizationId}/events/${e.id}`,
    organization_id: e.organizationId,
    type: e.type,
    livemode: e.livemode,
    created_at: e.createdAt,
    related: parseJson(e.relatedJson),
  };
}
