/** The gateway started as in production (the kit's service template) on its own database. */
import { startStore, type Store } from "../harness";

let s: Store;
beforeAll(async () => {
  s = await startStore("gw_service");
});
afterAll(async () => {
  await s?.close();
});

test("is ready once its database answers, and answers an unknown key with the envelope", async () => {
  const base = `http://127.0.0.1:${s.gateway.extra.port}`;
  expect((await fetch(`${base}/readyz`)).status).toBe(200);
  const res = await fetch(`${base}/v1/whoami`, { headers: { authorization: "Bearer dpp_sk_test_nope" } });
  expect(res.status).toBe(401);
  const body = (await res.json()) as { error: { code: string; request_id: string } };
  expect(body.error.code).toBe("invalid_key");
  expect(body.error.request_id).toBe(res.headers.get("request-id"));
});

test("evicts a revoked key from its cache through the change notification", async () => {
  const base = `http://127.0.0.1:${s.gateway.extra.port}`;
  const org = await s.admin.createOrganization("Org", "pro", "active");
  const { key, record } = await s.admin.createKey({ organizationId: org.id, livemode: false });
  // The key's creation is announced too (its insert): once that notification is in, it evicts nothing later.
  await s.gateway.extra.identityListener!.caughtUp();
  const whoami = () => fetch(`${base}/v1/whoami`, { headers: { authorization: `Bearer ${key}` } });
  expect((await whoami()).status).toBe(200);
  expect(s.gateway.extra.identityCache.keys.size).toBe(1);
  await s.admin.revokeKey(record.id);
  await s.gateway.extra.identityListener!.caughtUp();
  expect(s.gateway.extra.identityCache.keys.size).toBe(0);
  const res = await whoami();
  expect(res.status).toBe(401);
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe("key_revoked");
});

test("stops its HTTP server on stop", async () => {
  const port = s.gateway.extra.port;
  await s.gateway.stop();
  await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
});
