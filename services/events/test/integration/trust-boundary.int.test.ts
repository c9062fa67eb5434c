/**
 * The events service as an attacker on its network would reach it: reading another organization's feed
 * with a made-up context, or with a genuine token for one organization rewritten to another. Each is
 * refused UNAUTHENTICATED with no event in the answer; only a call signed by a trusted caller reads.
 */
import {
  CONTEXT_METADATA_KEY,
  REQUEST_ID_METADATA_KEY,
  createContextSigner,
  generateInternalKeyPair,
} from "@dpp/kit/internal";
import { editToken, metadataOf, rawUnaryCall } from "@dpp/kit/testing";
import { eventsV1 } from "@dpp/proto";
import { domainEvent, newOrg, startHarness, type Harness, type Tenant } from "../harness";

const S = eventsV1.EventsService;
const LIST = `/${S.typeName}/ListEvents`;

let h: Harness;
const victim: Tenant = { organizationId: newOrg(), livemode: true };
const attacker: Tenant = { organizationId: newOrg(), livemode: true };

function token(t: Tenant, privateKey = h.service.callerKeys.privateKey): string {
  return createContextSigner({ issuer: "gateway", privateKey }).sign(
    { organizationId: t.organizationId, livemode: t.livemode },
    { audience: "events", method: LIST, deadline: Date.now() + 5000 },
  );
}

/** A token and a request id beside it, as the kit's client sends them. */
const withToken = (token: string) =>
  metadataOf([
    [CONTEXT_METADATA_KEY, token],
    [REQUEST_ID_METADATA_KEY, "req_t"],
  ]);

const list = (md: ReturnType<typeof metadataOf>) =>
  rawUnaryCall(h.service.address, S, "listEvents", { limit: 100 }, md);

beforeAll(async () => {
  h = await startHarness("events_trust");
  await h.publish(domainEvent(victim), domainEvent(victim));
  await h.waitForFeed(victim, 2);
});
afterAll(async () => {
  await h?.close();
});

describe("a direct call to events", () => {
  it("with a made-up context and no proof is refused", async () => {
    const res = await list(
      metadataOf([
        ["x-dpp-organization-id", victim.organizationId],
        ["x-dpp-livemode", "true"],
      ]),
    );
    expect(res).toMatchObject({ ok: false, status: "UNAUTHENTICATED" });
  });

  it("with a genuine token for organization A rewritten to organization B is refused", async () => {
    const forged = editToken(token(attacker), (c) => {
      c.ctx.organization_id = victim.organizationId;
    });
    expect(await list(withToken(forged))).toMatchObject({
      ok: false,
      status: "UNAUTHENTICATED",
    });
  });

  it("with a token signed by a key the service does not trust is refused", async () => {
    const forged = token(victim, generateInternalKeyPair().privateKey);
    expect(await list(withToken(forged))).toMatchObject({
      ok: false,
      status: "UNAUTHENTICATED",
    });
  });

  it("with a genuine token reads only its own organization's feed", async () => {
    const own = await list(withToken(token(attacker)));
    expect(own.ok && own.response.events).toEqual([]);
    const victims = await list(withToken(token(victim)));
    expect(victims.ok && victims.response.events.length).toBe(2);
  });
});
