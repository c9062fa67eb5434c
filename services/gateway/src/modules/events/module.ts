/** The events service's route: the organization's feed. */
import { parseLimit, type ClientOf } from "@dpp/kit";
import type { eventsV1 } from "@dpp/proto";
import { list } from "../../http/json";
import { many, single } from "../../http/request";
import type { GatewayModule } from "../../http/route";
import { eventJson } from "./mapping";

export type EventsClient = ClientOf<typeof eventsV1.EventsService>;

export function eventsModule(deps: { client: EventsClient }): GatewayModule {
  const { client } = deps;
  return {
    name: "events",
    routes: [
      {
        operationId: "listEvents",
        method: "GET",
        path: "/organizations/{organization}/events",
        auth: "organization",
        scope: "events:read",
        idempotent: false,
        successStatus: 200,
        handler: async ({ ctx, query }) => {
          const raw = { limit: single(query, "limit"), cursor: single(query, "cursor") };
          const res = await client.listEvents(
            { limit: parseLimit(raw.limit), cursor: raw.cursor, types: many(query, "type") },
            { context: ctx },
          );
          return { body: list(res.events.map(eventJson), res.hasMore, res.nextCursor) };
        },
      },
    ],
  };
}
