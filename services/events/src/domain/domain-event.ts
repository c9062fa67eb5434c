/**
 * Reading a bus message as a DomainEvent. A message that is not a well-formed
 * event is reported (never thrown) so the consumer can log and skip it.
 */
import type { DomainEvent } from "@dpp/contract";
import { isEventType } from "./event-type";

export const MAX_EVENT_ID_LENGTH = 255;
export const MAX_ORGANIZATION_ID_LENGTH = 255;

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

export type ParsedEvent = { ok: true; event: DomainEvent } | { ok: false; reason: string };

function isIdentifier(v: unknown, max: number): v is string {
  // Identifiers are printable ASCII without spaces (text columns would refuse NUL anyway).
  return typeof v === "string" && v.length > 0 && v.length <= max && /^[\x21-\x7e]+$/.test(v);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function parseDomainEvent(value: string): ParsedEvent {
  let raw: unknown;
  try {
    raw = JSON.parse(value);
  } catch {
    return { ok: false, reason: "not_json" };
  }
  if (!isPlainObject(raw)) return { ok: false, reason: "not_an_object" };
  const { id, type, organization_id, livemode, created_at, related } = raw;
  if (!isIdentifier(id, MAX_EVENT_ID_LENGTH)) return { ok: false, reason: "invalid_id" };
  if (!isEventType(type)) return { ok: false, reason: "invalid_type" };
  if (!isIdentifier(organization_id, MAX_ORGANIZATION_ID_LENGTH))
    return { ok: false, reason: "invalid_organization_id" };
  if (typeof livemode !== "boolean") return { ok: false, reason: "invalid_livemode" };
  if (typeof created_at !== "string" || !RFC3339.test(created_at) || Number.isNaN(Date.parse(created_at))) {
    return { ok: false, reason: "invalid_created_at" };
  }
  if (!isPlainObject(related)) return { ok: false, reason: "invalid_related" };
  return { ok: true, event: { id, type, organization_id, livemode, created_at, related } };
}
