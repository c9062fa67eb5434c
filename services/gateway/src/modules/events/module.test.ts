import type { RequestContext } from "@dpp/kit";
import { timestampFromDate, type eventsV1 } from "@dpp/proto";
import { jsonBody, jsonText, RawJson, RawJsonBytes } from "../../http/json";
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
/** The texts a service of the previous release answers for the same events: the public JSON of each. */
const texts = messages.map((m) => JSON.stringify(eventJson(m)));
/** What a current service answers for them: the texts as one JSON array, UTF-8. */
const pageBytes = (items: readonly string[]) => new Uint8Array(Buffer.from(`[${items.join(",")}]`, "utf8"));

const response = (r: Partial<eventsV1.ListEventsResponse>): eventsV1.ListEventsResponse => ({
  $typeName: "dpp.events.v1.ListEventsResponse",
  events: [],
  eventJson: [],
  pageJson: new Uint8Array(0),
  hasMore: true,
  nextCursor: "c_2",
  ...r,
});

describe("a feed page", () => {
  it("places the service's page bytes in the list envelope as they are, never as a string", () => {
    const page = pageBytes(texts);
    const body = feedPage(response({ pageJson: page }));
    expect(body).toBeInstanceOf(RawJsonBytes);
    const sent = jsonBody(body);
    expect(sent).toBeInstanceOf(Uint8Array);
    const expected = `{"object":"list","data":[${texts.join(",")}],"has_more":true,"next_cursor":"c_2"}`;
    expect(Buffer.from(sent as Uint8Array).equals(Buffer.from(expected, "utf8"))).toBe(true);
    // The non-ASCII text of the events travels as its UTF-8 bytes: the body's length is theirs.
    expect((sent as Uint8Array).byteLength).toBe(Buffer.byteLength(expected));
    const empty = feedPage(response({ pageJson: pageBytes([]), hasMore: false, nextCursor: "c_0" }));
    expect(jsonText(empty)).toBe('{"object":"list","data":[],"has_more":false,"next_cursor":"c_0"}');
  });

  it("places the texts of a service of the previous release in the list envelope as they are", () => {
    const body = feedPage(response({ eventJson: texts }));
    expect(body).toBeInstanceOf(RawJson);
    expect(jsonText(body)).toBe(
      `{"object":"list","data":[${texts.join(",")}],"has_more":true,"next_cursor":"c_2"}`,
    );
  });

  it("is the same text whether the service answered the page, texts or, predating both, messages", () => {
    const fromMessages = feedPage(response({ events: messages }));
    expect(fromMessages).not.toBeInstanceOf(RawJson);
    expect(jsonText(feedPage(response({ eventJson: texts })))).toBe(jsonText(fromMessages));
    expect(jsonText(feedPage(response({ pageJson: pageBytes(texts) })))).toBe(jsonText(fromMessages));
    const empty = { hasMore: false, nextCursor: "c_0" };
    expect(jsonText(feedPage(response(empty)))).toBe(
      '{"object":"list","data":[],"has_more":false,"next_cursor":"c_0"}',
    );
  });
});

describe("the listEvents route", () => {
  // A current service answers the page; one of the previous release ignores as_page and answers the texts; an
  // older one ignores both flags and answers messages. The route answers the same page from each.
  it.each([
    ["the page", response({ pageJson: pageBytes(texts), hasMore: false })],
    ["one text per event", response({ eventJson: texts, hasMore: false })],
    ["messages", response({ events: messages, hasMore: false })],
  ])(
    "asks for the page (and the texts), with the page's parameters, and answers a service answering %s",
    async (_, answer) => {
      const requests: unknown[] = [];
      const client = {
        listEvents: async (req: unknown) => {
          requests.push(req);
          return answer;
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
        {
          limit: 2,
          cursor: "c_1",
          types: ["passport.updated", "passport.created"],
          asPage: true,
          asJson: true,
        },
      ]);
      expect(JSON.parse(jsonText(out.body))).toEqual({
        object: "list",
        data: messages.map(eventJson),
        has_more: false,
        next_cursor: "c_2",
      });
    },
  );
});
