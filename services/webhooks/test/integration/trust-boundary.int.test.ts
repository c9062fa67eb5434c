/** The webhooks service as an attacker on its network would reach it (the kit's trust-boundary suite). */
import { describeTrustBoundary, eventually, newTenant, tenantContext } from "@dpp/kit/testing";
import { webhooksV1 } from "@dpp/proto";
import { startHarness, startReceiver, type Harness } from "../harness";

let h: Harness;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const victim = newTenant();
let endpointId = "";
let attemptId = "";

beforeAll(async () => {
  h = await startHarness("webhooks_trust");
  receiver = await startReceiver();
  const created = await h.client.createEndpoint(
    { url: receiver.url, types: ["passport.created"] },
    { context: tenantContext(victim) },
  );
  endpointId = created.endpoint!.id;
  await h.publish(victim, 1);
  // The victim's delivery is done before the suite looks at its rows.
  attemptId = await eventually(async () => {
    const a = await h.client.listAttempts({ endpointId }, { context: tenantContext(victim) });
    return a.attempts[0]?.id;
  });
});
afterAll(async () => {
  await receiver?.close();
  await h?.close();
});

describeTrustBoundary(webhooksV1.WebhooksService, {
  under: () => h.service,
  tenant: () => victim,
  calls: [
    { method: "listEndpoints", request: () => ({}) },
    { method: "createEndpoint", request: () => ({ url: "http://127.0.0.1:9/forged" }) },
    { method: "getEndpoint", request: () => ({ id: endpointId }) },
    { method: "updateEndpoint", request: () => ({ id: endpointId, description: "forged" }) },
    { method: "rotateSecret", request: () => ({ id: endpointId }) },
    { method: "sendTestEvent", request: () => ({ id: endpointId }) },
    { method: "listAttempts", request: () => ({ endpointId }) },
    { method: "redeliver", request: () => ({ endpointId, attemptId }) },
    { method: "getBacklog", request: () => ({ id: endpointId }) },
    { method: "deleteEndpoint", request: () => ({ id: endpointId }) },
  ],
  snapshot: () => h.rowCounts(victim),
});
