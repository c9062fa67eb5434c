/** ListEvents: type filter, paging, cursors, parameter validation. */
import { ApiError } from "@dpp/contract";
import { domainEvent, newOrg, startHarness, type Harness, type Tenant } from "../harness";

let h: Harness;

beforeAll(async () => {
  h = await startHarness("events_list");
});

afterAll(async () => {
  await h?.close();
});

const tenant = (): Tenant => ({ organizationId: newOrg(), livemode: false });

async function rejection(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

describe("ListEvents type filter", () => {
  const t = tenant();
  const types = [
    "passport.created",
    "passport.updated",
    "passport.published",
    "passport.updated",
    "document.created",
    "passport.published",
  ];
  const sent = types.map((type) => domainEvent(t, type));

  beforeAll(async () => {
    await h.publish(...sent);
    await h.waitForFeed(t, sent.length);
  });

  it("filters on one type, keeping feed sequences", async () => {
    const page = await h.list(t, { types: ["passport.published"] });
    expect(page.events.map((e) => e.id)).toEqual([sent[2]!.id, sent[5]!.id]);
    expect(await h.sequences(page.events)).toEqual([3, 6]);
    expect(page.hasMore).toBe(false);
  });

  it("filters on several repeated types, oldest first", async () => {
    const page = await h.list(t, { types: ["passport.published", "passport.created", "passport.published"] });
    expect(page.events.map((e) => e.type)).toEqual([
      "passport.created",
      "passport.published",
      "passport.published",
    ]);
    expect(await h.sequences(page.events)).toEqual([1, 3, 6]);
  });

  it("returns nothing for a type that never occurred, with a cursor", async () => {
    const page = await h.list(t, { types: ["unit.created"] });
    expect(page.events).toEqual([]);
    expect(page.hasMore).toBe(false);
    expect(page.nextCursor).not.toBe("");
  });

  it("pages a filtered feed with its cursor", async () => {
    const filter = ["passport.updated", "passport.published"];
    const p1 = await h.list(t, { types: filter, limit: 3 });
    expect(await h.sequences(p1.events)).toEqual([2, 3, 4]);
    expect(p1.hasMore).toBe(true);
    // The same set of types in another order and repeated is the same filter.
    const p2 = await h.list(t, {
      types: ["passport.published", "passport.updated", "passport.updated"],
      limit: 3,
      cursor: p1.nextCursor,
    });
    expect(await h.sequences(p2.events)).toEqual([6]);
    expect(p2.hasMore).toBe(false);
  });

  it.each([
    ["Passport.created"],
    ["passport"],
    [""],
    ["passport created"],
    ["passport."],
    ["x".repeat(101) + ".y"],
  ])("refuses type %j with invalid_request", async (bad) => {
    const err = await rejection(h.list(t, { types: ["passport.created", bad] }));
    expect(err.code).toBe("invalid_request");
    expect(err.details).toMatchObject({ issues: [{ source: { parameter: "type" }, rule: "event_type" }] });
  });
});

describe("ListEvents paging", () => {
  it("pages with limit and cursor until has_more is false, then polls forward", async () => {
    const t = tenant();
    const sent = Array.from({ length: 7 }, () => domainEvent(t));
    await h.publish(...sent);
    await h.waitForFeed(t, 7);

    const seen: string[] = [];
    const hasMore: boolean[] = [];
    let cursor = "";
    for (let i = 0; i < 10; i++) {
      const page = await h.list(t, { limit: 3, cursor });
      seen.push(...page.events.map((e) => e.id));
      hasMore.push(page.hasMore);
      expect(page.nextCursor).not.toBe("");
      cursor = page.nextCursor;
      if (!page.hasMore) break;
    }
    expect(hasMore).toEqual([true, true, false]);
    expect(seen).toEqual(sent.map((e) => e.id));

    // The last page's cursor reads forward: nothing yet, then only the new events.
    const empty = await h.list(t, { limit: 3, cursor });
    expect(empty.events).toEqual([]);
    expect(empty.hasMore).toBe(false);
    expect(empty.nextCursor).not.toBe("");
    const later = [domainEvent(t), domainEvent(t)];
    await h.publish(...later);
    await h.waitForFeed(t, 9);
    const fresh = await h.list(t, { limit: 3, cursor: empty.nextCursor });
    expect(fresh.events.map((e) => e.id)).toEqual([later[0]!.id, later[1]!.id]);
    expect(await h.sequences(fresh.events)).toEqual([8, 9]);
    expect(fresh.hasMore).toBe(false);
  });

  it("has has_more exactly when a further event exists (page size equal to the remainder)", async () => {
    const t = tenant();
    await h.publish(domainEvent(t), domainEvent(t));
    await h.waitForFeed(t, 2);
    const page = await h.list(t, { limit: 2 });
    expect(page.events).toHaveLength(2);
    expect(page.hasMore).toBe(false);
  });

  it("gives an empty feed a cursor that later reads every event", async () => {
    const t = tenant();
    const empty = await h.list(t);
    expect(empty.events).toEqual([]);
    expect(empty.hasMore).toBe(false);
    expect(empty.nextCursor).not.toBe("");
    const e = domainEvent(t);
    await h.publish(e);
    await h.waitForFeed(t, 1);
    const page = await h.list(t, { cursor: empty.nextCursor });
    expect(page.events.map((x) => x.id)).toEqual([e.id]);
  });

  it("does not let a cursor of one tenant's position leak the other mode's events", async () => {
    const org = newOrg();
    const test = { organizationId: org, livemode: false };
    const live = { organizationId: org, livemode: true };
    await h.publish(domainEvent(live), domainEvent(live), domainEvent(test));
    await h.waitForFeed(live, 2);
    await h.waitForFeed(test, 1);
    const first = await h.list(test, { limit: 1 });
    const rest = await h.list(test, { cursor: first.nextCursor });
    expect(rest.events).toEqual([]);
    expect((await h.list(test)).events.every((e) => !e.livemode)).toBe(true);
  });
});

describe("ListEvents refusals", () => {
  const t = tenant();

  it("refuses a cursor sent with other types (cursor_invalid)", async () => {
    const plain = await h.list(t);
    const err = await rejection(h.list(t, { cursor: plain.nextCursor, types: ["passport.created"] }));
    expect(err.code).toBe("cursor_invalid");
    const filtered = await h.list(t, { types: ["passport.created"] });
    expect((await rejection(h.list(t, { cursor: filtered.nextCursor }))).code).toBe("cursor_invalid");
    expect(
      (
        await rejection(
          h.list(t, { cursor: filtered.nextCursor, types: ["passport.created", "passport.updated"] }),
        )
      ).code,
    ).toBe("cursor_invalid");
  });

  it.each([
    ["garbage!"],
    ["eyJ4IjoxfQ"],
    [Buffer.from(JSON.stringify({ l: "events", f: "x", p: 1 })).toString("base64url")],
  ])("refuses a malformed cursor %j", async (cursor) => {
    expect((await rejection(h.list(t, { cursor }))).code).toBe("cursor_invalid");
  });

  it("answers configuration_error without a tenant context", async () => {
    const err = await rejection(h.client.listEvents({}, { context: { requestId: "req_no_tenant" } }));
    expect(err.code).toBe("configuration_error");
  });
});
