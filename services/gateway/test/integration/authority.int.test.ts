/**
 * Authority tokens (docs/decisions/0058) against the real gateway store: issued for one organization and mode,
 * stored as a digest, refused when unknown, forged, revoked or expired, never taken for an API key nor an API key
 * for one, and bound to their organization.
 */
import { generateAuthorityTokenText } from "../../src/modules/identity/authority";
import { Authenticator } from "../../src/modules/identity/authenticator";
import { refusal, startStore, type Store } from "../harness";

let s: Store;
let auth: Authenticator;

beforeAll(async () => {
  s = await startStore("gw_authority");
  auth = new Authenticator(s.identity);
});
afterAll(() => s?.close());

const bearer = (text: string) => `Bearer ${text}`;
const inOneHour = () => new Date(Date.now() + 3600_000);

it("issues a token bound to its organization and mode, keeps only its digest, and reads it on every use", async () => {
  const o = await s.admin.createOrganization("Brand", "pro", "active");
  const other = await s.admin.createOrganization("Other", "pro", "active");
  const { token, record } = await s.admin.issueAuthorityToken({
    organizationId: o.id,
    livemode: true,
    name: "Inspector",
    expiresAt: inOneHour(),
  });
  expect(token).toMatch(/^dpp_at_live_[0-9A-Za-z]{38}$/);
  const row = await s.sql
    .selectFrom("authority_token")
    .selectAll()
    .where("id", "=", record.id)
    .executeTakeFirstOrThrow();
  expect(JSON.stringify(row)).not.toContain(token.slice(12, 40));
  const found = await auth.authorityOf(bearer(token));
  expect([found.id, found.organization_id, found.livemode]).toEqual([record.id, o.id, true]);
  expect(() => auth.authorityAccess(found, o.id)).not.toThrow();
  expect(refusalSync(() => auth.authorityAccess(found, other.id)).code).toBe(
    "organization_not_found_or_not_granted",
  );
  expect(refusalSync(() => auth.authorityAccess(found, "-")).code).toBe("wildcard_not_supported");

  // Never an API key: refused by the key path, with a message naming what it opens.
  const asKey = await refusal(async () => auth.keyOf(bearer(token)));
  expect([asKey.code, asKey.details]).toEqual(["invalid_key", { reason: "format" }]);
  expect(asKey.message).toContain("/v1/authority/organizations/");
  // And an API key is not a token.
  const key = await s.admin.createKey({ organizationId: o.id, livemode: true });
  expect((await refusal(auth.authorityOf(bearer(key.key)))).details).toEqual({ reason: "format" });

  // Revoked: refused from the next use on, no cache in between.
  await s.admin.revokeAuthorityToken(record.id);
  expect((await refusal(auth.authorityOf(bearer(token)))).code).toBe("key_revoked");
});

it("refuses an expired, unknown, tampered or missing token", async () => {
  const o = await s.admin.createOrganization("Brand 2", "pro", "active");
  const { token } = await s.admin.issueAuthorityToken({
    organizationId: o.id,
    livemode: false,
    name: "Inspector",
    expiresAt: inOneHour(),
  });
  const later = new Authenticator(s.identity, () => new Date(Date.now() + 2 * 3600_000));
  expect((await refusal(later.authorityOf(bearer(token)))).code).toBe("key_expired");
  expect((await refusal(auth.authorityOf(bearer(generateAuthorityTokenText(false))))).details).toEqual({
    reason: "unknown",
  });
  // The same text with the other mode's prefix fails its checksum.
  const otherMode = token.replace("dpp_at_test_", "dpp_at_live_");
  expect((await refusal(auth.authorityOf(bearer(otherMode)))).details).toEqual({ reason: "format" });
  const tampered = token.slice(0, -1) + (token.endsWith("A") ? "B" : "A");
  expect((await refusal(auth.authorityOf(bearer(tampered)))).details).toEqual({ reason: "format" });
  expect((await refusal(auth.authorityOf(undefined))).details).toEqual({ reason: "missing" });
  expect((await refusal(auth.authorityOf(`Basic ${token}`))).details).toEqual({ reason: "scheme" });
});

it("is issued only for an organization that exists, with an expiry within 90 days", async () => {
  const o = await s.admin.createOrganization("Brand 3", "pro", "active");
  const issue = (expiresAt: Date, organizationId = o.id) =>
    s.admin.issueAuthorityToken({ organizationId, livemode: true, name: "Inspector", expiresAt });
  expect((await refusal(issue(new Date(Date.now() - 1000)))).code).toBe("validation_failed");
  expect((await refusal(issue(new Date(Date.now() + 91 * 86400_000)))).code).toBe("validation_failed");
  expect((await refusal(issue(inOneHour(), "org_nope"))).code).toBe("resource_not_found");
  expect((await refusal(s.admin.revokeAuthorityToken("atk_nope"))).code).toBe("resource_not_found");
});

function refusalSync(f: () => unknown) {
  try {
    f();
  } catch (err) {
    return err as { code: string };
  }
  throw new Error("expected a refusal");
}
