import type { RequestContext } from "@dpp/kit";
import { timestampFromDate, type eventsV1 } from "@dpp/proto";
import { jsonText, RawJson } from "../../http/json";
import type { HandlerInput } from "../../http/route";
import { eventJson } from "./mapping";
import { eventsModule, feedPage, type EventsClient } from "./module";

const message = (id: string, related: unknown): eventsV1.Event => ({
  $typeName: "dpp.events.v1.Event",
  id,
  organizationId: "org_1",
  type: "passport.updated",
  livemode: true,
  createdAt: timestampFromDate(new Date("2026-01-02T03:04:05.678Z")),
  relatedJson: JSON.stringify(related),
});

const messages = [
  message("evt_1", { id: "pp_1", object: "passport", version: 2, previous_status: null }),
  message("evt_2", { "2": [1, { b: 'é\u2028"' }], a: 1.5e-7 }),
];
/** The texts a current service answers for the same events: the public JSON of each. */
const texts = messages.map((m) => JSON.stringify(eventJson(m)));

const response = (r: Partial<eventsV1.ListEventsResponse>): eventsV1.ListEventsResponse => ({
  $typeName: "dpp.events.v1.ListEventsResponse",
  events: [],
  eventJson: [],
  hasMore: true,
  nextCursor: "c_2",
  ...r,
});

describe("a feed page", () => {
  it("places the service's texts in the list envelope as they are", () => {
    const body = feedPage(response({ eventJson: texts }));
    expect(body).toBeInstanceOf(RawJson);
    expect(jsonText(body)).toBe(
      `{"object":"list","data":[${texts.join(",")}],"has_more":true,"next_cursor":"c_2"}`,
    );
  });

  it("is the same text whether the service answered texts or, predating them, messages", () => {
    const fromMessages = feedPage(response({ events: messages }));
    expect(fromMessages).not.toBeInstanceOf(RawJson);
    expect(jsonText(feedPage(response({ eventJson: texts })))).toBe(jsonText(fromMessages));
    const empty = { hasMore: false, nextCursor: "c_0" };
    expect(jsonText(feedPage(response(empty)))).toBe(
      '{"object":"list","data":[],"has_more":false,"next_cursor":"c_0"}',
    );
  });
});

describe("the listEvents route", () => {
  it("asks for the texts, with the page's parameters, and answers them", async () => {
    const requests: unknown[] = [];
    const client = {
      listEvents: async (req: unknown) => {
        requests.push(req);
        return response({ eventJson: texts, hasMore: false });
      },
    } as unknown as EventsClient;
    const route = eventsModule({ client }).routes[0]!;
    const ctx: RequestContext = { requestId: "req_1", organizationId: "org_1", livemode: true };
    const out = await route.handler({
      params: { organization: "org_1" },
      query: { limit: "2", cursor: "c_1", type: ["passport.updated", "passport.created"] },
      body: undefined,
      ctx,
    } satisfies HandlerInput);
    expect(requests).toEqual([
      { limit: 2, cursor: "c_1", types: ["passport.updated", "passport.created"], asJson: true },
    ]);
    expect(JSON.parse(jsonText(out.body))).toEqual({
      object: "list",
      data: messages.map(eventJson),
      has_more: false,
      next_cursor: "c_2",
    });
  });
});
