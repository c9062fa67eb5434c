/** The events service's route: the organization's feed. */
import { parseLimit, type ClientOf } from "@dpp/kit";
import type { eventsV1 } from "@dpp/proto";
import { list, rawList, rawListBytes, RawJson } from "../../http/json";
import { many, single } from "../../http/request";
import type { GatewayModule } from "../../http/route";
import type { ModuleFactory } from "../deps";
import { eventJson } from "./mapping";

export type EventsClient = ClientOf<typeof eventsV1.EventsService>;

/**
 * A page of the feed as the API answers it, by what the service filled. The service answers the page's events
 * as one JSON array (`page_json`, never empty when answered: `[]` for an empty page), assembled by Postgres from
 * the texts rendered when the events were appended, placed in the envelope as bytes
 * (docs/decisions/0030-feed-page-assembled-by-postgres.md). A service that predates `as_page` answers one text
 * per event (`event_json`), placed as they are; one that predates `as_json` answers messages, mapped here
 * (docs/decisions/0026-event-json-rendered-once.md).
 */
export function feedPage(res: eventsV1.ListEventsResponse) {
  if (res.pageJson.length > 0) return rawListBytes(res.pageJson, res.hasMore, res.nextCursor);
  if (res.events.length > 0) return list(res.events.map(eventJson), res.hasMore, res.nextCursor);
  return rawList(
    res.eventJson.map((text) => new RawJson(text)),
    res.hasMore,
    res.nextCursor,
  );
}

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
        query: { limit: "single", cursor: "single", type: "repeatable" },
        handler: async ({ ctx, query }) => {
          const raw = { limit: single(query, "limit"), cursor: single(query, "cursor") };
          const res = await client.listEvents(
            {
              limit: parseLimit(raw.limit),
              cursor: raw.cursor,
              types: many(query, "type"),
              asPage: true,
              asJson: true,
            },
            { context: ctx },
          );
          return { body: feedPage(res) };
        },
      },
    ],
  };
}

/** The module in the gateway's module list (index.generated.ts). */
export const fromDeps: ModuleFactory = (deps) => eventsModule({ client: deps.events });
