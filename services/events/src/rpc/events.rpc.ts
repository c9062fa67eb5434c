/** EventsService: thin handlers; the rules live in ../domain, the queries in ../store. */
import { DEFAULT_LIMIT, MAX_LIMIT, requireTenant, type CallContext } from "@dpp/kit";
import { timestampFromDate, type eventsV1 } from "@dpp/proto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { feedCursor, normalizeTypeFilter, readFeedCursor } from "../domain";
import type { EventsRepository, FeedEvent } from "../store/events.repository";

type EventInit = MessageInitShape<typeof eventsV1.EventSchema>;
type ListEventsResult = { events: EventInit[]; hasMore: boolean; nextCursor: string };

export function toProtoEvent(e: FeedEvent): EventInit {
  return {
    id: e.id,
    organizationId: e.organizationId,
    type: e.type,
    livemode: e.livemode,
    createdAt: timestampFromDate(e.createdAt),
    relatedJson: JSON.stringify(e.related),
  };
}

export function createEventsRpc(repo: Pick<EventsRepository, "list">) {
  return {
    async listEvents(req: eventsV1.ListEventsRequest, call: CallContext): Promise<ListEventsResult> {
      const tenant = requireTenant(call.ctx);
      // Checked by the gateway (1..MAX_LIMIT); 0 means the default.
      const limit = req.limit > 0 ? Math.min(req.limit, MAX_LIMIT) : DEFAULT_LIMIT;
      const filters = { types: normalizeTypeFilter(req.types) };
      const after = readFeedCursor(filters, req.cursor);
      const page = await repo.list(tenant, { after, types: filters.types, limit });
      const last = page.events.length > 0 ? page.events[page.events.length - 1]!.sequence : after;
      return {
        events: page.events.map(toProtoEvent),
        hasMore: page.hasMore,
        // Always set: an integrator polls forward from here, even from an empty page.
        nextCursor: feedCursor(filters, last),
      };
    },
  };
}
