/** ReadFeed: the feed after a sequence, each event with its sequence and the unfiltered feed's cursor after it. */
import { randomBytes } from "node:crypto";
import { domainEvent, newOrg, startHarness, type Harness, type Tenant } from "../harness";

let h: Harness;

beforeAll(async () => {
  h = await startHarness("events_read_feed");
});

afterAll(async () => {
  await h?.close();
});

const context = (t: Tenant) => ({
  requestId: `req_${randomBytes(4).toString("hex")}`,
  organizationId: t.organizationId,
  livemode: t.livemode,
});

it("reads in feed order after a sequence, with cursors the feed itself reads forward from", async () => {
  const t: Tenant = { organizationId: newOrg(), livemode: false };
  const sent = ["passport.created", "document.created", "passport.updated"].map((type) =>
    domainEvent(t, type),
  );
  await h.publish(...sent);
  await h.waitForFeed(t, 3);
  const all = await h.client.readFeed({ limit: 10 }, { context: context(t) });
  expect(all.entries.map((e) => JSON.parse(e.eventJson).id)).toEqual(sent.map((e) => e.id));
  expect(all.entries.map((e) => Number(e.sequence))).toEqual([1, 2, 3]);
  expect(all.hasMore).toBe(false);
  expect(all.headSequence).toBe(3n);

  const after = await h.client.readFeed(
    { afterSequence: 1n, types: ["passport.updated"], limit: 10 },
    { context: context(t) },
  );
  expect(after.entries.map((e) => JSON.parse(e.eventJson).id)).toEqual([sent[2]!.id]);
  // The cursor after the first event reads the rest of the unfiltered feed.
  const rest = await h.list(t, { cursor: all.entries[0]!.cursor, limit: 10, asJson: true });
  expect(rest.eventJson.map((j) => JSON.parse(j).id)).toEqual([sent[1]!.id, sent[2]!.id]);
  // Another tenant's feed is not read.
  const other = await h.client.readFeed(
    {},
    { context: context({ organizationId: newOrg(), livemode: false }) },
  );
  expect(other.entries).toEqual([]);
});
