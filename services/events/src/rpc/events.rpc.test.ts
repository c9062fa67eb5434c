import type { CallContext, Logger } from "@dpp/kit";
import { timestampFromDate, type eventsV1 } from "@dpp/proto";
import { readFeedCursor } from "../domain";
import type {
  EventsRepository,
  FeedEvent,
  FeedEventJson,
  FeedPage,
  FeedQuery,
} from "../store/events.repository";
import { createEventsRpc, toProtoEvent } from "./events.rpc";

const feedEvent = (sequence: number): FeedEvent => ({
  id: `evt_${sequence}`,
  organizationId: "org_1",
  livemode: true,
  type: "passport.published",
  createdAt: new Date("2026-11-21T10:00:00.5Z"),
  related: { object: "passport", id: "pp_1" },
  sequence,
});

const eventJson = (sequence: number): FeedEventJson => ({ json: `{"id":"evt_${sequence}"}`, sequence });

type Repo = Pick<EventsRepository, "list" | "listJson" | "listPage" | "head">;
const never = (what: string) => async (): Promise<never> => {
  throw new Error(`${what} called`);
};

/** A repository whose list answers `page` (and listJson and listPage never: they fail the test when called). */
const messages = (list: (tenant: unknown, q: FeedQuery) => Promise<FeedPage>) =>
  ({ list, listJson: never("listJson"), listPage: never("listPage"), head: never("head") }) satisfies Repo;

const call = (ctx: CallContext["ctx"]): CallContext => ({
  ctx,
  caller: "gateway",
  log: {} as Logger,
  deadline: Infinity,
  cancelled: () => false,
});
const req = (r: Partial<eventsV1.ListEventsRequest>) =>
  ({ limit: 0, cursor: "", types: [], asJson: false, ...r }) as eventsV1.ListEventsRequest;

describe("toProtoEvent", () => {
  it("maps a stored event to the message", () => {
    expect(toProtoEvent(feedEvent(7))).toEqual({
      id: "evt_7",
      organizationId: "org_1",
      type: "passport.published",
      livemode: true,
      createdAt: timestampFromDate(new Date("2026-11-21T10:00:00.5Z")),
      relatedJson: '{"object":"passport","id":"pp_1"}',
    });
  });
});

describe("listEvents", () => {
  const tenantCtx = { requestId: "req_1", organizationId: "org_1", livemode: true };

  it("queries the tenant from the context and encodes the last sequence in next_cursor", async () => {
    const queries: unknown[] = [];
    const rpc = createEventsRpc(
      messages(async (tenant, q) => {
        queries.push({ tenant, q });
        return { events: [feedEvent(4), feedEvent(5)], hasMore: true };
      }),
    );
    const res = await rpc.listEvents(req({ limit: 2, types: ["passport.published"] }), call(tenantCtx));
    expect(queries).toEqual([
      { tenant: tenantCtx, q: { after: 0, types: ["passport.published"], limit: 2 } satisfies FeedQuery },
    ]);
    expect(res.hasMore).toBe(true);
    expect(res.events.map((e) => e.id)).toEqual(["evt_4", "evt_5"]);
    expect(res.eventJson).toEqual([]);
    expect(readFeedCursor({ types: ["passport.published"] }, res.nextCursor)).toBe(5);
  });

  it("keeps the given position on an empty page", async () => {
    const rpc = createEventsRpc(messages(async () => ({ events: [], hasMore: false })));
    const first = await rpc.listEvents(req({}), call(tenantCtx));
    expect(readFeedCursor({ types: [] }, first.nextCursor)).toBe(0);
    const rpc2 = createEventsRpc(messages(async () => ({ events: [feedEvent(9)], hasMore: false })));
    const c9 = (await rpc2.listEvents(req({}), call(tenantCtx))).nextCursor;
    const again = await rpc.listEvents(req({ cursor: c9 }), call(tenantCtx));
    expect(again.events).toEqual([]);
    expect(readFeedCursor({ types: [] }, again.nextCursor)).toBe(9);
  });

  it("answers the stored texts with as_json, the same query and cursor, and no message", async () => {
    const queries: unknown[] = [];
    const rpc = createEventsRpc({
      list: never("list"),
      head: never("head"),
      listPage: never("listPage"),
      listJson: async (tenant, q) => {
        queries.push({ tenant, q });
        return { events: [eventJson(4), eventJson(5)], hasMore: true };
      },
    });
    const res = await rpc.listEvents(
      req({ limit: 2, types: ["passport.published"], asJson: true }),
      call(tenantCtx),
    );
    expect(queries).toEqual([
      { tenant: tenantCtx, q: { after: 0, types: ["passport.published"], limit: 2 } },
    ]);
    expect(res).toMatchObject({ events: [], eventJson: ['{"id":"evt_4"}', '{"id":"evt_5"}'], hasMore: true });
    expect(readFeedCursor({ types: ["passport.published"] }, res.nextCursor)).toBe(5);
    const empty = createEventsRpc({
      list: async () => ({ events: [], hasMore: false }),
      listJson: async () => ({ events: [], hasMore: false }),
      head: never("head"),
      listPage: never("listPage"),
    });
    const again = await empty.listEvents(
      req({ cursor: res.nextCursor, types: ["passport.published"], asJson: true }),
      call(tenantCtx),
    );
    expect(again).toMatchObject({ events: [], eventJson: [], hasMore: false });
    expect(readFeedCursor({ types: ["passport.published"] }, again.nextCursor)).toBe(5);
  });

  it("answers the page as one UTF-8 array text with as_page (over as_json), the same query, cursor from its last sequence", async () => {
    const queries: unknown[] = [];
    const text = '[{"id":"evt_4","name":"é\u2028"},{"id":"evt_5"}]';
    const rpc = createEventsRpc({
      list: never("list"),
      listJson: never("listJson"),
      head: never("head"),
      listPage: async (tenant, q) => {
        queries.push({ tenant, q });
        return { json: Buffer.from(text), hasMore: true, lastSequence: 5 };
      },
    });
    const res = await rpc.listEvents(
      req({ limit: 2, types: ["passport.published"], asJson: true, asPage: true }),
      call(tenantCtx),
    );
    expect(queries).toEqual([
      { tenant: tenantCtx, q: { after: 0, types: ["passport.published"], limit: 2 } },
    ]);
    expect(Buffer.from(res.pageJson).toString("utf8")).toBe(text);
    expect(res).toMatchObject({ events: [], eventJson: [], hasMore: true });
    expect(readFeedCursor({ types: ["passport.published"] }, res.nextCursor)).toBe(5);

    // An empty page keeps the position it was asked from, and is still answered: `[]`.
    const empty = createEventsRpc({
      list: never("list"),
      listJson: never("listJson"),
      head: never("head"),
      listPage: async () => ({ json: Buffer.from("[]"), hasMore: false, lastSequence: null }),
    });
    const again = await empty.listEvents(
      req({ cursor: res.nextCursor, types: ["passport.published"], asPage: true }),
      call(tenantCtx),
    );
    expect(Buffer.from(again.pageJson).toString("utf8")).toBe("[]");
    expect(again.hasMore).toBe(false);
    expect(readFeedCursor({ types: ["passport.published"] }, again.nextCursor)).toBe(5);
  });

  it("requires a tenant context", async () => {
    const rpc = createEventsRpc(messages(async () => ({ events: [], hasMore: false })));
    await expect(rpc.listEvents(req({}), call({ requestId: "req_1" }))).rejects.toMatchObject({
      code: "configuration_error",
    });
  });
});
