import { parseDomainEvent } from "./domain-event";

const good = {
  id: "evt_01",
  type: "passport.published",
  organization_id: "org_1",
  livemode: true,
  created_at: "2026-11-21T10:00:00.123Z",
  related: { object: "passport", id: "pp_1", version: 3 },
};

describe("parseDomainEvent", () => {
  it("accepts a well-formed event and keeps only the envelope fields", () => {
    const res = parseDomainEvent(JSON.stringify({ ...good, extra: "ignored" }));
    expect(res).toEqual({ ok: true, event: good });
  });

  it("accepts offsets in created_at", () => {
    expect(parseDomainEvent(JSON.stringify({ ...good, created_at: "2026-11-21T11:00:00+01:00" })).ok).toBe(
      true,
    );
  });

  it.each([
    ["not json", "{", "not_json"],
    ["empty", "", "not_json"],
    ["array", "[]", "not_an_object"],
    ["null", "null", "not_an_object"],
    ["missing id", JSON.stringify({ ...good, id: undefined }), "invalid_id"],
    ["empty id", JSON.stringify({ ...good, id: "" }), "invalid_id"],
    ["id with space", JSON.stringify({ ...good, id: "evt 1" }), "invalid_id"],
    ["bad type", JSON.stringify({ ...good, type: "published" }), "invalid_type"],
    ["missing org", JSON.stringify({ ...good, organization_id: undefined }), "invalid_organization_id"],
    ["numeric org", JSON.stringify({ ...good, organization_id: 5 }), "invalid_organization_id"],
    ["string livemode", JSON.stringify({ ...good, livemode: "true" }), "invalid_livemode"],
    ["missing created_at", JSON.stringify({ ...good, created_at: undefined }), "invalid_created_at"],
    ["date-only created_at", JSON.stringify({ ...good, created_at: "2026-11-21" }), "invalid_created_at"],
    ["related array", JSON.stringify({ ...good, related: [] }), "invalid_related"],
    ["related missing", JSON.stringify({ ...good, related: undefined }), "invalid_related"],
  ])("refuses %s", (_name, value, reason) => {
    expect(parseDomainEvent(value)).toEqual({ ok: false, reason });
  });
});
