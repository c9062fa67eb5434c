/** EventsService: thin handlers; the rules live in ../domain, the queries in ../store. */
import { ApiError } from "@dpp/contract";
import { pageLimit, requireTenant, type CallContext } from "@dpp/kit";
import { timestampFromDate, type eventsV1 } from "@dpp/proto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { feedCursor, normalizeTypeFilter, readFeedCursor } from "../domain";
import type { EventsRepository, FeedEvent, FeedPage } from "../store/events.repository";

type EventInit = MessageInitShape<typeof eventsV1.EventSchema>;
type ListEventsResult = {
  events: EventInit[];
  eventJson: string[];
  pageJson: Uint8Array;
  hasMore: boolean;
  nextCursor: string;
};
const NO_BYTES = new Uint8Array(0);

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

export function createEventsRpc(repo: Pick<EventsRepository, "list" | "listJson" | "listPage" | "head">) {
  return {
    /** The feed from a sequence, each event with its sequence and the unfiltered feed's cursor after it. */
    async readFeed(req: eventsV1.ReadFeedRequest, call: CallContext) {
      const tenant = requireTenant(call.ctx);
      const limit = pageLimit(req.limit);
      const types = normalizeTypeFilter(req.types);
      const after = Number(req.afterSequence);
      if (!Number.isSafeInteger(after) || after < 0)
        throw new ApiError("invalid_request", "after_sequence must be a non-negative integer.", {
          issues: [{ source: { parameter: "after_sequence" }, rule: "minimum" }],
        });
      const [page, head] = await Promise.all([
        repo.listJson(tenant, { after, types, limit }),
        repo.head(tenant),
      ]);
      return {
        headSequence: BigInt(Math.max(head, page.events.at(-1)?.sequence ?? 0)),
        entries: page.events.map((e) => ({
          sequence: BigInt(e.sequence),
          eventJson: e.json,
          cursor: feedCursor({ types: [] }, e.sequence),
        })),
        hasMore: page.hasMore,
      };
    },

    async listEvents(req: eventsV1.ListEventsRequest, call: CallContext): Promise<ListEventsResult> {
      const tenant = requireTenant(call.ctx);
      // Checked by the gateway (1..MAX_LIMIT); 0 means the default.
      const limit = pageLimit(req.limit);
      const filters = { types: normalizeTypeFilter(req.types) };
      const after = readFeedCursor(filters, req.cursor);
      const query = { after, types: filters.types, limit };
      // Always set: an integrator polls forward from here, even from an empty page.
      const nextCursor = (page: FeedPage<{ sequence: number }>) =>
        feedCursor(filters, page.events.length > 0 ? page.events[page.events.length - 1]!.sequence : after);
      if (req.asPage) {
        // The page as Postgres joined it, encoded once (docs/decisions/0030).
        const page = await repo.listPage(tenant, query);
        return {
          events: [],
          eventJson: [],
          pageJson: page.json,
          hasMore: page.hasMore,
          nextCursor: feedCursor(filters, page.lastSequence ?? after),
        };
      }
      // A caller of the previous release: one text per event.
      if (req.asJson) {
        const page = await repo.listJson(tenant, query);
        const eventJson = page.events.map((e) => e.json);
        return {
          events: [],
          eventJson,
          pageJson: NO_BYTES,
          hasMore: page.hasMore,
          nextCursor: nextCursor(page),
        };
      }
      // A caller that predates as_json reads messages.
      const page = await repo.list(tenant, query);
      const events = page.events.map(toProtoEvent);
      return {
        events,
        eventJson: [],
        pageJson: NO_BYTES,
        hasMore: page.hasMore,
        nextCursor: nextCursor(page),
      };
    },
  };
}
