/**
 * The events service as an attacker on its network would reach it (the kit's trust-boundary suite): reading an
 * organization's feed with a made-up context, or with a genuine token for another organization rewritten to it,
 * is refused UNAUTHENTICATED; only a call signed by a trusted caller reads, and only its own organization's feed.
 */
import { describeTrustBoundary, newTenant } from "@dpp/kit/testing";
import { eventsV1 } from "@dpp/proto";
import { domainEvent, startHarness, type Harness } from "../harness";

let h: Harness;
const victim = newTenant(true);
const attacker = newTenant(true);

beforeAll(async () => {
  h = await startHarness("events_trust");
  await h.publish(domainEvent(victim), domainEvent(victim));
  await h.waitForFeed(victim, 2);
});
afterAll(async () => {
  await h?.close();
});

describeTrustBoundary(eventsV1.EventsService, {
  under: () => h.service,
  tenant: () => victim,
  calls: [
    { method: "listEvents", request: () => ({ limit: 100 }) },
    { method: "readFeed", request: () => ({ limit: 100 }) },
  ],
});

it("a genuine token reads only its own organization's feed", async () => {
  expect((await h.list(attacker, { limit: 100 })).events).toEqual([]);
  expect((await h.list(victim, { limit: 100 })).events.length).toBe(2);
});
