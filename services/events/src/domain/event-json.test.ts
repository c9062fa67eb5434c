import type { DomainEvent } from "@dpp/contract";
import { eventPublicJson, feedTimestamp, UnreadableCreatedAt } from "./event-json";

const event = (over: Partial<DomainEvent> = {}): DomainEvent => ({
  id: "evt_1",
  type: "passport.published",
  organization_id: "org_1",
  livemode: true,
  created_at: "2026-11-21T10:00:00.123Z",
  related: { object: "passport", id: "pp_1", version: 3 },
  ...over,
});

describe("eventPublicJson", () => {
  it("renders the envelope in the API's field order", () => {
    expect(eventPublicJson(event())).toBe(
      '{"object":"event","id":"evt_1","name":"organizations/org_1/events/evt_1","organization_id":"org_1",' +
        '"type":"passport.published","livemode":true,"created_at":"2026-11-21T10:00:00.123Z",' +
        '"related":{"id":"pp_1","object":"passport","version":3}}',
    );
  });

  it("orders related's keys as jsonb does, array indices first as a JavaScript object holds them", () => {
    const related = { b: 1, aa: 2, a: 3, "10": 4, "2": 5, "01": 6, é: 7, z: { y: 1, x: [{ d: 1, c: 2 }] } };
    expect(JSON.parse(eventPublicJson(event({ related }))).related).toEqual(related);
    expect(eventPublicJson(event({ related })).split('"related":')[1]).toBe(
      '{"2":5,"10":4,"a":3,"b":1,"z":{"x":[{"c":2,"d":1}],"y":1},"01":6,"aa":2,"é":7}}',
    );
  });

  it("keeps a __proto__ key as the ordinary key JSON.parse makes it", () => {
    const related = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as Record<string, unknown>;
    expect(eventPublicJson(event({ related })).split('"related":')[1]).toBe(
      '{"a":1,"__proto__":{"polluted":true}}}',
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("renders related as the JSON text the column is written from (toJSON applied, undefined dropped)", () => {
    const related = { at: new Date("2026-01-02T03:04:05.678Z"), gone: undefined, n: -0 };
    expect(eventPublicJson(event({ related })).split('"related":')[1]).toBe(
      '{"n":0,"at":"2026-01-02T03:04:05.678Z"}}',
    );
  });
});

describe("feedTimestamp", () => {
  it.each([
    ["2026-11-21T10:00:00Z", "2026-11-21T10:00:00.000Z"],
    ["2026-11-21T10:00:00.5+05:30", "2026-11-21T04:30:00.500Z"],
    ["2026-11-21t10:00:00.999z", "2026-11-21T10:00:00.999Z"],
    // Microseconds as Postgres stores them, then whole milliseconds.
    ["2026-11-21T10:00:00.123999Z", "2026-11-21T10:00:00.123Z"],
    ["2026-11-21T10:00:00.1239996Z", "2026-11-21T10:00:00.124Z"],
    ["2026-11-21T10:00:00.9999996Z", "2026-11-21T10:00:01.000Z"],
    ["2026-12-31T23:59:59.9999999-14:00", "2027-01-01T14:00:00.000Z"],
    ["1969-12-31T23:59:59.9995Z", "1969-12-31T23:59:59.999Z"],
    ["9999-12-31T23:59:59.999-14:00", "+010000-01-01T13:59:59.999Z"],
  ])("reads %s as %s", (text, iso) => {
    expect(feedTimestamp(text)).toBe(iso);
  });

  it.each([["2026-11-21 10:00:00Z"], ["2026-11-21T10:00:00"], ["2026-13-45T10:00:00Z"], ["yesterday"]])(
    "refuses %j as data (SQLSTATE 22007)",
    (text) => {
      expect(() => feedTimestamp(text)).toThrow(UnreadableCreatedAt);
      expect(() => feedTimestamp(text)).toThrow(expect.objectContaining({ code: "22007" }));
    },
  );
});
