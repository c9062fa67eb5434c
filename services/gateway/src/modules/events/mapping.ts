/**
 * Events service messages as the public JSON shapes (snake_case, nulls, resource names): the answer of a
 * service that predates ListEventsRequest.as_json. A current one answers each event's public JSON text, rendered
 * once when it was appended (services/events/src/domain/event-json.ts renders the same object).
 */
import type { eventsV1 } from "@dpp/proto";
import { parseJson, rfc3339 } from "../../http/json";

export function eventJson(e: eventsV1.Event) {
  return {
    object: "event" as const,
    id: e.id,
    name: `organizations/${e.organizationId}/events/${e.id}`,
    organization_id: e.organizationId,
    type: e.type,
    livemode: e.livemode,
    created_at: rfc3339(e.createdAt),
    related: parseJson(e.relatedJson),
  };
}
