/** Events service messages as the public JSON shapes (snake_case, nulls, resource names). */
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
