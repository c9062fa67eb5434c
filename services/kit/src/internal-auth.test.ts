import { execFile } from "node:child_process";
import crypto, { createPrivateKey, sign } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { z } from "zod";
import { ConfigError, loadConfig } from "./config";
import type { RequestContext } from "./context";
import {
  createContextSigner,
  createContextVerifier,
  formatTrustedKeys,
  generateInternalKeyPair,
  internalAuthCallerEnv,
  internalAuthServiceEnv,
  MAX_TOKEN_LIFETIME_MS,
  parseTrustedKeys,
  TOKEN_REUSE_WINDOW_MS,
  publicKeyOf,
  type ContextClaims,
  type ContextSigner,
  type Verification,
} from "./internal-auth";
import { keygenLines } from "./internal-auth-keygen";

const METHOD = "/dpp.passport.v1.PassportService/GetPassport";
const T0 = 1_750_000_000_000;
/** The request id of the calls below: it travels beside the token, not in it. */
const RID = "req_1";

const gateway = generateInternalKeyPair();
const gatewayNext = generateInternalKeyPair();
const admin = generateInternalKeyPair();
const stranger = generateInternalKeyPair();

const ctxA: RequestContext = {
  requestId: RID,
  organizationId: "org_a",
  livemode: true,
  keyId: "key_1",
  credentialKind: "connector",
  plan: {
    planId: "starter",
    subscriptionStatus: "active",
    publishLimit: 50,
    unitLimit: 1000,
    documentLimit: 200,
  },
};

let clock = T0;
const now = () => clock;

function verifier(trusted = { gateway: [gateway.publicKey], admin: [admin.publicKey] }) {
  return createContextVerifier({ audience: "passport", trusted, now });
}

const signerOf = (issuer: string, privateKey: string) => createContextSigner({ issuer, privateKey, now });

const token = (
  o: { issuer?: string; key?: string; aud?: string; deadline?: number; ctx?: RequestContext } = {},
) =>
  signerOf(o.issuer ?? "gateway", o.key ?? gateway.privateKey).sign(o.ctx ?? ctxA, {
    audience: o.aud ?? "passport",
    method: METHOD,
    deadline: o.deadline ?? T0 + 5000,
  });

/** A token made by hand from the documented format, signed with a raw seed. */
function craft(claims: unknown, seed: string): string {
  const key = createPrivateKey({
    key: Buffer.concat([
      Buffer.from("302e020100300506032b657004220420", "hex"),
      Buffer.from(seed, "base64url"),
    ]),
    format: "der",
    type: "pkcs8",
  });
  const payload = Buffer.from(JSON.stringify(claims));
  return `${payload.toString("base64url")}.${sign(null, payload, key).toString("base64url")}`;
}

const claimsOf = (t: string): ContextClaims =>
  JSON.parse(Buffer.from(t.split(".")[0]!, "base64url").toString());
const withClaims = (t: string, edit: (c: ContextClaims) => void): string => {
  const c = claimsOf(t);
  edit(c);
  return `${Buffer.from(JSON.stringify(c)).toString("base64url")}.${t.split(".")[1]}`;
};
const callerSchema = z.object(internalAuthCallerEnv);
const serviceSchema = z.object(internalAuthServiceEnv);
const reason = (v: Verification) => (v.ok ? "ok" : v.reason);

beforeEach(() => {
  clock = T0;
});

describe("generateInternalKeyPair", () => {
  it("gives a base64url 32-byte seed and the matching public key, different every time", () => {
    expect(gateway.privateKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(gateway.publicKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(publicKeyOf(gateway.privateKey)).toBe(gateway.publicKey);
    expect(gateway.privateKey).not.toBe(admin.privateKey);
  });
});

describe("sign and verify", () => {
  it("accepts a valid token and gives exactly the signed context, the call's request id and the caller", () => {
    const v = verifier().verify(token(), METHOD, RID);
    expect(v).toEqual({ ok: true, caller: "gateway", ctx: ctxA, expiresAt: T0 + TOKEN_REUSE_WINDOW_MS });
  });

  it("accepts a public context (request id only) and a second trusted caller", () => {
    const v = verifier().verify(
      token({ issuer: "admin", key: admin.privateKey, ctx: { requestId: "r" } }),
      METHOD,
      "r",
    );
    expect(v).toEqual({
      ok: true,
      caller: "admin",
      ctx: { requestId: "r" },
      expiresAt: T0 + TOKEN_REUSE_WINDOW_MS,
    });
  });

  it("writes the documented claims without the request id, for the reuse window or a later deadline, never past 60 s", () => {
    expect(claimsOf(token())).toEqual({
      iss: "gateway",
      aud: "passport",
      rpc: METHOD,
      iat: T0,
      exp: T0 + TOKEN_REUSE_WINDOW_MS,
      ctx: {
        organization_id: "org_a",
        livemode: true,
        key_id: "key_1",
        credential_kind: "connector",
        plan: {
          plan_id: "starter",
          subscription_status: "active",
          publish_limit: 50,
          unit_limit: 1000,
          document_limit: 200,
        },
      },
    });
    expect(claimsOf(token({ deadline: T0 + 40_000 })).exp).toBe(T0 + 40_000);
    expect(claimsOf(token({ deadline: T0 + 10 * 60_000 })).exp).toBe(T0 + MAX_TOKEN_LIFETIME_MS);
    expect(TOKEN_REUSE_WINDOW_MS).toBeLessThanOrEqual(MAX_TOKEN_LIFETIME_MS);
  });

  it("accepts a token made by hand from the documented format", () => {
    const t = craft(
      { iss: "gateway", aud: "passport", rpc: METHOD, iat: T0, exp: T0 + 1000, ctx: {} },
      gateway.privateKey,
    );
    expect(verifier().verify(t, METHOD, "req_h")).toEqual({
      ok: true,
      caller: "gateway",
      ctx: { requestId: "req_h" },
      expiresAt: T0 + 1000,
    });
  });

  it("refuses claims edited after signing: another organization, another mode, a higher limit", () => {
    const t = token();
    const edits: Array<(c: ContextClaims) => void> = [
      (c) => (c.ctx.organization_id = "org_b"),
      (c) => (c.ctx.livemode = false),
      (c) => (c.ctx.plan!.publish_limit = 1_000_000),
      (c) => (c.exp = c.exp + 1),
    ];
    for (const edit of edits)
      expect(reason(verifier().verify(withClaims(t, edit), METHOD, RID))).toBe("bad_signature");
  });

  it("refuses an edited signature", () => {
    const t = token();
    const sig = Buffer.from(t.split(".")[1]!, "base64url");
    sig[10] = sig[10]! ^ 0x01;
    expect(reason(verifier().verify(`${t.split(".")[0]}.${sig.toString("base64url")}`, METHOD, RID))).toBe(
      "bad_signature",
    );
  });

  it("refuses a trusted name signed with a key the service does not hold", () => {
    const v = verifier().verify(token({ key: stranger.privateKey }), METHOD, RID);
    expect(v).toEqual({ ok: false, reason: "bad_signature", claimedIssuer: "gateway" });
  });

  it("refuses a trusted name signed with the key of another trusted caller", () => {
    const asGateway = verifier().verify(token({ issuer: "gateway", key: admin.privateKey }), METHOD, RID);
    expect(asGateway).toEqual({ ok: false, reason: "bad_signature", claimedIssuer: "gateway" });
    const asAdmin = verifier().verify(token({ issuer: "admin", key: gateway.privateKey }), METHOD, RID);
    expect(asAdmin).toEqual({ ok: false, reason: "bad_signature", claimedIssuer: "admin" });
  });

  it("refuses an issuer the service does not trust, whatever its key", () => {
    const v = verifier().verify(token({ issuer: "imports", key: stranger.privateKey }), METHOD, RID);
    expect(v).toEqual({ ok: false, reason: "untrusted_issuer", claimedIssuer: "imports" });
    // a caller trusted by another service is not trusted here
    const onlyGateway = verifier({ gateway: [gateway.publicKey], admin: [] });
    expect(reason(onlyGateway.verify(token({ issuer: "admin", key: admin.privateKey }), METHOD, RID))).toBe(
      "untrusted_issuer",
    );
  });

  it("refuses a token meant for another service or another method", () => {
    expect(reason(verifier().verify(token({ aud: "events" }), METHOD, RID))).toBe("wrong_audience");
    expect(reason(verifier().verify(token(), "/dpp.passport.v1.PassportService/PublishPassport", RID))).toBe(
      "wrong_method",
    );
  });

  it("refuses an expired token, allowing 5 s of clock skew", () => {
    const t = token({ deadline: T0 + 1000 });
    const { exp } = claimsOf(t);
    clock = exp + 5000;
    expect(reason(verifier().verify(t, METHOD, RID))).toBe("ok");
    clock = exp + 5001;
    expect(reason(verifier().verify(t, METHOD, RID))).toBe("expired");
  });

  it("refuses a token issued in the future beyond the skew allowance", () => {
    clock = T0 + 5000;
    const within = token({ deadline: T0 + 10_000 });
    clock = T0 + 5001;
    const beyond = token({ deadline: T0 + 10_000 });
    clock = T0;
    expect(reason(verifier().verify(within, METHOD, RID))).toBe("ok");
    expect(reason(verifier().verify(beyond, METHOD, RID))).toBe("issued_in_future");
  });

  it("refuses a trusted caller's token that lives longer than 60 s or ends before it starts", () => {
    const base = { iss: "gateway", aud: "passport", rpc: METHOD, iat: T0, ctx: {} };
    const long = craft({ ...base, exp: T0 + MAX_TOKEN_LIFETIME_MS + 1 }, gateway.privateKey);
    const inverted = craft({ ...base, exp: T0 - 1 }, gateway.privateKey);
    expect(reason(verifier().verify(long, METHOD, RID))).toBe("bad_lifetime");
    expect(reason(verifier().verify(inverted, METHOD, RID))).toBe("bad_lifetime");
  });

  it("refuses a missing token", () => {
    expect(verifier().verify(undefined, METHOD, RID)).toEqual({ ok: false, reason: "missing" });
    expect(verifier().verify("", METHOD, RID)).toEqual({ ok: false, reason: "missing" });
  });

  it.each([
    ["one segment", "abc"],
    ["three segments", "a.b.c"],
    ["characters outside base64url", "ey+J/.abc="],
    ["a payload that is not JSON", `${Buffer.from("not json").toString("base64url")}.AAAA`],
    ["a JSON array", `${Buffer.from("[1]").toString("base64url")}.AAAA`],
    ["claims without an issuer", `${Buffer.from('{"aud":"passport"}').toString("base64url")}.AAAA`],
    ["a huge value", `${"A".repeat(9000)}.AAAA`],
  ])("refuses a malformed token: %s", (_what, t) => {
    expect(reason(verifier().verify(t, METHOD, RID))).toBe("malformed");
  });

  it("refuses a well-signed token whose claims do not match the schema", () => {
    const base = { iss: "gateway", aud: "passport", rpc: METHOD, iat: T0, exp: T0 + 1000 };
    const badCtx = craft({ ...base, ctx: { credential_kind: "root" } }, gateway.privateKey);
    const noCtx = craft(base, gateway.privateKey);
    const textTime = craft({ ...base, exp: String(T0 + 1000), ctx: {} }, gateway.privateKey);
    for (const t of [badCtx, noCtx, textTime])
      expect(reason(verifier().verify(t, METHOD, RID))).toBe("malformed");
  });

  it("accepts every key of a caller while a key is rotated", () => {
    const v = verifier({ gateway: [gatewayNext.publicKey, gateway.publicKey], admin: [] });
    expect(reason(v.verify(token({ key: gateway.privateKey }), METHOD, RID))).toBe("ok");
    expect(reason(v.verify(token({ key: gatewayNext.privateKey }), METHOD, RID))).toBe("ok");
    expect(reason(v.verify(token({ key: admin.privateKey }), METHOD, RID))).toBe("bad_signature");
    expect(v.callers).toEqual(["gateway"]);
  });

  it("refuses to build a verifier that trusts nobody, or with a bad name or key", () => {
    expect(() => createContextVerifier({ audience: "passport", trusted: {} })).toThrow(/trusts no caller/);
    expect(() =>
      createContextVerifier({ audience: "Passport", trusted: { gateway: [gateway.publicKey] } }),
    ).toThrow(/invalid service name/);
    expect(() => createContextVerifier({ audience: "passport", trusted: { gateway: ["short"] } })).toThrow();
    expect(() => createContextSigner({ issuer: "gateway", privateKey: "short" })).toThrow(/seed/);
  });
});

describe("the request id beside the token", () => {
  it("gives each call the request id it carried, whatever the token", () => {
    const t = token();
    const v = verifier();
    expect(v.verify(t, METHOD, "req_first")).toMatchObject({ ok: true, ctx: { requestId: "req_first" } });
    expect(v.verify(t, METHOD, "req_second")).toMatchObject({ ok: true, ctx: { requestId: "req_second" } });
    expect(reason(v.verify(t, METHOD, "r".repeat(200)))).toBe("ok");
  });

  it.each([
    ["absent (or sent twice)", undefined],
    ["empty", ""],
    ["longer than 200 characters", "r".repeat(201)],
  ])("refuses a call whose request id is %s, as a malformed claim was, naming the issuer", (_what, rid) => {
    expect(verifier().verify(token(), METHOD, rid)).toEqual({
      ok: false,
      reason: "malformed",
      claimedIssuer: "gateway",
    });
  });

  it("ignores a request_id left inside the signed context by a caller of the previous version", () => {
    const t = craft(
      {
        iss: "gateway",
        aud: "passport",
        rpc: METHOD,
        iat: T0,
        exp: T0 + 1000,
        ctx: { request_id: "req_old" },
      },
      gateway.privateKey,
    );
    expect(verifier().verify(t, METHOD, "req_beside")).toMatchObject({
      ok: true,
      ctx: { requestId: "req_beside" },
    });
    expect(reason(verifier().verify(t, METHOD, undefined))).toBe("malformed");
  });
});

describe("reused tokens", () => {
  const signer = () => signerOf("gateway", gateway.privateKey);
  const sign = (
    s: ContextSigner,
    o: { ctx?: RequestContext; method?: string; aud?: string; deadline?: number } = {},
  ) =>
    s.sign(o.ctx ?? ctxA, {
      audience: o.aud ?? "passport",
      method: o.method ?? METHOD,
      deadline: o.deadline ?? clock + 5000,
    });

  it("signs once for calls with the same audience, method and context, whatever their request ids", () => {
    const s = signer();
    const first = sign(s, { ctx: { ...ctxA, requestId: "req_a" } });
    clock += 1000;
    const second = sign(s, { ctx: { ...ctxA, requestId: "req_b" } });
    expect(second).toBe(first);
    expect(s.cached).toBe(1);
    const v = verifier();
    expect(v.verify(first, METHOD, "req_a")).toMatchObject({
      ok: true,
      ctx: { ...ctxA, requestId: "req_a" },
    });
    expect(v.verify(second, METHOD, "req_b")).toMatchObject({
      ok: true,
      ctx: { ...ctxA, requestId: "req_b" },
    });
  });

  it("signs anew for another method, audience or context", () => {
    const s = signer();
    const base = sign(s);
    const others = [
      sign(s, { method: "/dpp.passport.v1.PassportService/ListPassports" }),
      sign(s, { aud: "events" }),
      sign(s, { ctx: { ...ctxA, organizationId: "org_b" } }),
      sign(s, { ctx: { ...ctxA, livemode: false } }),
      sign(s, { ctx: { ...ctxA, plan: { ...ctxA.plan!, publishLimit: 51 } } }),
    ];
    expect(new Set([base, ...others]).size).toBe(6);
    expect(s.cached).toBe(6);
  });

  it("signs anew once the kept token no longer lives until the call's deadline", () => {
    const s = signer();
    const first = sign(s);
    const { exp } = claimsOf(first);
    clock = exp - 5000;
    expect(sign(s, { deadline: exp })).toBe(first);
    expect(sign(s, { deadline: exp + 1 })).not.toBe(first);
    const second = sign(s, { deadline: exp + 1 });
    expect(claimsOf(second)).toMatchObject({ iat: exp - 5000, exp: exp - 5000 + TOKEN_REUSE_WINDOW_MS });
    // A deadline beyond the longest lifetime always gets a token of its own, as long as allowed.
    const far = sign(s, { deadline: clock + 10 * 60_000 });
    expect(claimsOf(far).exp).toBe(clock + MAX_TOKEN_LIFETIME_MS);
    clock += 1;
    expect(sign(s, { deadline: clock + 10 * 60_000 })).not.toBe(far);
  });

  it("keeps a verified token and still checks the method, the expiry and the issue time on every call", () => {
    const v = verifier();
    const t = sign(signer());
    const { exp } = claimsOf(t);
    expect(reason(v.verify(t, METHOD, "req_1"))).toBe("ok");
    expect(v.cached).toBe(1);
    expect(v.verify(t, "/dpp.passport.v1.PassportService/PublishPassport", "req_2")).toEqual({
      ok: false,
      reason: "wrong_method",
      claimedIssuer: "gateway",
    });
    expect(reason(v.verify(t, METHOD, undefined))).toBe("malformed");
    clock = T0 - 5001;
    expect(reason(v.verify(t, METHOD, "req_3"))).toBe("issued_in_future");
    clock = exp + 5000;
    expect(reason(v.verify(t, METHOD, "req_4"))).toBe("ok");
    clock = exp + 5001;
    expect(reason(v.verify(t, METHOD, "req_5"))).toBe("expired");
    expect(v.cached).toBe(0);
  });

  it("checks the signature of a kept token once", () => {
    const v = verifier();
    const t = sign(signer());
    const checks = jest.spyOn(crypto, "verify");
    try {
      for (let i = 0; i < 5; i++) expect(reason(v.verify(t, METHOD, `req_${i}`))).toBe("ok");
      expect(checks).toHaveBeenCalledTimes(1);
    } finally {
      checks.mockRestore();
    }
  });

  it("keeps no refused token", () => {
    const v = verifier();
    const t = sign(signer());
    expect(reason(v.verify(t, "/dpp.passport.v1.PassportService/PublishPassport", RID))).toBe("wrong_method");
    expect(reason(v.verify(t, METHOD, undefined))).toBe("malformed");
    expect(reason(v.verify(token({ key: stranger.privateKey }), METHOD, RID))).toBe("bad_signature");
    expect(reason(v.verify(token({ aud: "events" }), METHOD, RID))).toBe("wrong_audience");
    expect(v.cached).toBe(0);
    expect(reason(v.verify(t, METHOD, RID))).toBe("ok");
    expect(v.cached).toBe(1);
  });

  it("gives every call a context of its own: what one handler changes no other call sees", () => {
    const v = verifier();
    const t = sign(signer());
    const first = v.verify(t, METHOD, "req_a");
    const second = v.verify(t, METHOD, "req_b");
    if (!first.ok || !second.ok) throw new Error("expected both calls to verify");
    first.ctx.organizationId = "org_changed";
    first.ctx.plan!.publishLimit = 1_000_000;
    expect(second.ctx).toEqual({ ...ctxA, requestId: "req_b" });
    expect(v.verify(t, METHOD, "req_c")).toMatchObject({ ok: true, ctx: { ...ctxA, requestId: "req_c" } });
  });

  it("keeps at most cacheSize tokens on either side, the oldest forgotten first", () => {
    const s = createContextSigner({ issuer: "gateway", privateKey: gateway.privateKey, now, cacheSize: 3 });
    const v = createContextVerifier({
      audience: "passport",
      trusted: { gateway: [gateway.publicKey] },
      now,
      cacheSize: 3,
    });
    const ctxOf = (i: number): RequestContext => ({ ...ctxA, organizationId: `org_${i}` });
    const first = sign(s, { ctx: ctxOf(0) });
    for (let i = 0; i < 5; i++) {
      expect(reason(v.verify(sign(s, { ctx: ctxOf(i) }), METHOD, RID))).toBe("ok");
      clock += 1;
    }
    expect(s.cached).toBe(3);
    expect(v.cached).toBe(3);
    // The first context's token was forgotten: it is signed anew (a later issue time).
    expect(sign(s, { ctx: ctxOf(0) })).not.toBe(first);
    expect(sign(s, { ctx: ctxOf(4) })).toBe(sign(s, { ctx: ctxOf(4) }));
    // A size of 0 keeps nothing: every call signs and verifies in full.
    const none = createContextSigner({
      issuer: "gateway",
      privateKey: gateway.privateKey,
      now,
      cacheSize: 0,
    });
    sign(none);
    expect(none.cached).toBe(0);
  });

  it("forgets expired tokens as new ones are kept", () => {
    const s = signer();
    const v = verifier();
    expect(reason(v.verify(sign(s), METHOD, RID))).toBe("ok");
    clock += TOKEN_REUSE_WINDOW_MS + 5001;
    expect(reason(v.verify(sign(s, { ctx: { ...ctxA, organizationId: "org_b" } }), METHOD, RID))).toBe("ok");
    expect(s.cached).toBe(1);
    expect(v.cached).toBe(1);
  });
});

describe("writes with an Idempotency-Key", () => {
  const CREATE = "/dpp.passport.v1.PassportService/CreatePassport";
  const FP1 = "a".repeat(64);
  const FP2 = "b".repeat(64);
  const write = (key: string, fingerprint: string, callerOrganizationId = "org_a"): RequestContext => ({
    ...ctxA,
    requestId: `req_${key}`,
    idempotency: { key, fingerprint, callerOrganizationId },
  });
  const signWrite = (s: ContextSigner, ctx: RequestContext) =>
    s.sign(ctx, { audience: "passport", method: CREATE, deadline: clock + 5000 });

  it("share one token whatever their keys and fingerprints, which are not in it", () => {
    const s = signerOf("gateway", gateway.privateKey);
    const first = signWrite(s, write("k-1", FP1));
    clock += 1000;
    const second = signWrite(s, write("k-2", FP2));
    expect(second).toBe(first);
    expect(s.cached).toBe(1);
    expect(claimsOf(first)).toMatchObject({
      iat: T0,
      exp: T0 + TOKEN_REUSE_WINDOW_MS,
      ctx: { organization_id: "org_a", idempotency: { caller_organization_id: "org_a" } },
    });
    const text = Buffer.from(first.split(".")[0]!, "base64url").toString();
    for (const secret of ["k-1", "k-2", FP1, FP2]) expect(text).not.toContain(secret);
    // The caller organization is signed: another one is another token; so is a write without a key.
    expect(signWrite(s, write("k-1", FP1, "org_manager"))).not.toBe(first);
    expect(signWrite(s, ctxA)).not.toBe(first);
  });

  it("verify the shared token once and give each call its own key and fingerprint", () => {
    const t = signWrite(signerOf("gateway", gateway.privateKey), write("k-1", FP1));
    const v = verifier();
    const checks = jest.spyOn(crypto, "verify");
    try {
      const a = v.verify(t, CREATE, "req_a", { key: "k-1", fingerprint: FP1 });
      const b = v.verify(t, CREATE, "req_b", { key: "k-2", fingerprint: FP2 });
      expect(a).toMatchObject({ ok: true, ctx: { ...write("k-1", FP1), requestId: "req_a" } });
      expect(b).toMatchObject({ ok: true, ctx: { ...write("k-2", FP2), requestId: "req_b" } });
      expect(checks).toHaveBeenCalledTimes(1);
      expect(v.cached).toBe(1);
      // What one handler does to its idempotency no other call sees.
      if (!a.ok || !b.ok) throw new Error("expected both calls to verify");
      a.ctx.idempotency!.key = "k-changed";
      a.ctx.idempotency!.callerOrganizationId = "org_changed";
      expect(b.ctx.idempotency).toEqual({ key: "k-2", fingerprint: FP2, callerOrganizationId: "org_a" });
      expect(v.verify(t, CREATE, "req_c", { key: "k-3", fingerprint: FP1 })).toMatchObject({
        ok: true,
        ctx: { idempotency: { key: "k-3", fingerprint: FP1, callerOrganizationId: "org_a" } },
      });
    } finally {
      checks.mockRestore();
    }
  });

  it.each([
    ["no key and no fingerprint", undefined],
    ["no key (absent or sent twice)", { key: undefined, fingerprint: FP1 }],
    ["no fingerprint", { key: "k-1", fingerprint: undefined }],
    ["an empty key", { key: "", fingerprint: FP1 }],
    ["a key longer than 255 characters", { key: "k".repeat(256), fingerprint: FP1 }],
    ["a fingerprint that is not 64 lowercase hex digits", { key: "k-1", fingerprint: "A".repeat(64) }],
  ])(
    "refuse a keyed token whose call carries %s beside it, as malformed, naming the issuer",
    (_w, beside) => {
      const t = signWrite(signerOf("gateway", gateway.privateKey), write("k-1", FP1));
      const v = verifier();
      expect(v.verify(t, CREATE, RID, beside)).toEqual({
        ok: false,
        reason: "malformed",
        claimedIssuer: "gateway",
      });
      expect(v.cached).toBe(0);
      expect(reason(v.verify(t, CREATE, RID, { key: "k-1", fingerprint: FP1 }))).toBe("ok");
      // A kept token is checked on every call all the same.
      expect(reason(v.verify(t, CREATE, RID, beside))).toBe("malformed");
    },
  );

  it("refuse a key or fingerprint beside a token that signs no Idempotency-Key", () => {
    const t = signWrite(signerOf("gateway", gateway.privateKey), ctxA);
    const v = verifier();
    expect(reason(v.verify(t, CREATE, RID, { key: "k-1", fingerprint: FP1 }))).toBe("malformed");
    expect(reason(v.verify(t, CREATE, RID, { key: undefined, fingerprint: undefined }))).toBe("malformed");
    expect(v.verify(t, CREATE, RID)).toMatchObject({ ok: true, ctx: { ...ctxA, requestId: RID } });
    expect(v.verify(t, CREATE, RID)).not.toHaveProperty("ctx.idempotency");
  });

  it("check the token first: every refusal of the token keeps its reason", () => {
    const s = signerOf("gateway", gateway.privateKey);
    const t = signWrite(s, write("k-1", FP1));
    const v = verifier();
    expect(reason(v.verify(undefined, CREATE, RID, undefined))).toBe("missing");
    expect(reason(v.verify(t, METHOD, RID, undefined))).toBe("wrong_method");
    const stranger = signWrite(signerOf("gateway", admin.privateKey), write("k-1", FP1));
    expect(reason(v.verify(stranger, CREATE, RID, undefined))).toBe("bad_signature");
    clock += TOKEN_REUSE_WINDOW_MS + 5001;
    expect(reason(v.verify(t, CREATE, RID, undefined))).toBe("expired");
  });

  describe("from a caller of the previous version, which signed the key and fingerprint", () => {
    const earlier = (exp = T0 + 5000) =>
      craft(
        {
          iss: "gateway",
          aud: "passport",
          rpc: CREATE,
          iat: T0,
          exp,
          ctx: {
            organization_id: "org_a",
            livemode: true,
            idempotency: { key: "k-old", fingerprint: FP1, caller_organization_id: "org_a" },
          },
        },
        gateway.privateKey,
      );
    const expected = { key: "k-old", fingerprint: FP1, callerOrganizationId: "org_a" };

    it("are accepted with nothing beside the token, or the same key and fingerprint", () => {
      const v = verifier();
      expect(v.verify(earlier(), CREATE, RID)).toMatchObject({ ok: true, ctx: { idempotency: expected } });
      expect(v.verify(earlier(), CREATE, RID, { key: "k-old", fingerprint: FP1 })).toMatchObject({
        ok: true,
        ctx: { idempotency: expected },
      });
    });

    it("are refused with another key or fingerprint beside the token: the signed ones must agree", () => {
      const v = verifier();
      expect(reason(v.verify(earlier(), CREATE, RID, { key: "k-new", fingerprint: FP1 }))).toBe("malformed");
      expect(reason(v.verify(earlier(), CREATE, RID, { key: "k-old", fingerprint: FP2 }))).toBe("malformed");
    });

    it("are not kept: such a token serves one write", () => {
      const v = verifier();
      const checks = jest.spyOn(crypto, "verify");
      try {
        expect(reason(v.verify(earlier(), CREATE, RID))).toBe("ok");
        expect(reason(v.verify(earlier(), CREATE, RID))).toBe("ok");
        expect(checks).toHaveBeenCalledTimes(2);
        expect(v.cached).toBe(0);
      } finally {
        checks.mockRestore();
      }
    });
  });
});

describe("environment", () => {
  function configError(fn: () => unknown): string {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error("expected a ConfigError");
  }

  it("reads the private key from the variable or from the file it names", () => {
    expect(
      loadConfig(callerSchema, { INTERNAL_AUTH_PRIVATE_KEY: gateway.privateKey }).INTERNAL_AUTH_PRIVATE_KEY,
    ).toBe(gateway.privateKey);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "internal-auth-"));
    try {
      const file = path.join(dir, "key");
      fs.writeFileSync(file, `${gateway.privateKey}\n`);
      expect(loadConfig(callerSchema, { INTERNAL_AUTH_PRIVATE_KEY: file }).INTERNAL_AUTH_PRIVATE_KEY).toBe(
        gateway.privateKey,
      );
      fs.writeFileSync(file, "-----BEGIN NOTHING-----\n");
      expect(configError(() => loadConfig(callerSchema, { INTERNAL_AUTH_PRIVATE_KEY: file }))).toMatch(
        /INTERNAL_AUTH_PRIVATE_KEY: the file does not hold a base64url Ed25519 seed/,
      );
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });

  it("refuses a missing or invalid private key without echoing the value", () => {
    expect(configError(() => loadConfig(callerSchema, {}))).toMatch(/INTERNAL_AUTH_PRIVATE_KEY: required/);
    const almost = gateway.privateKey.slice(0, 40);
    const message = configError(() => loadConfig(callerSchema, { INTERNAL_AUTH_PRIVATE_KEY: almost }));
    expect(message).toMatch(
      /INTERNAL_AUTH_PRIVATE_KEY: neither a base64url Ed25519 seed .* nor a readable file/,
    );
    expect(message).not.toContain(almost);
  });

  it("reads the trusted keys, several per caller, commas or whitespace between entries", () => {
    const text = `gateway:${gatewayNext.publicKey}, gateway:${gateway.publicKey}\n admin:${admin.publicKey},gateway:${gateway.publicKey}`;
    const { INTERNAL_AUTH_TRUSTED_KEYS: trusted } = loadConfig(serviceSchema, {
      INTERNAL_AUTH_TRUSTED_KEYS: text,
    });
    expect(trusted).toEqual({
      gateway: [gatewayNext.publicKey, gateway.publicKey],
      admin: [admin.publicKey],
    });
    expect(parseTrustedKeys(formatTrustedKeys(trusted))).toEqual(trusted);
    const v = createContextVerifier({ audience: "passport", trusted, now });
    expect(reason(v.verify(token(), METHOD, RID))).toBe("ok");
  });

  it("names every bad entry of the trusted keys", () => {
    const text = `gateway${gateway.publicKey},Admin:${admin.publicKey},events:nope`;
    const message = configError(() => loadConfig(serviceSchema, { INTERNAL_AUTH_TRUSTED_KEYS: text }));
    expect(message).toMatch(/entry 1 .*expected <caller name>:<base64url public key>/);
    expect(message).toMatch(/entry 2 .*caller name must match/);
    expect(message).toMatch(/entry 3 .*not a base64url Ed25519 public key/);
    expect(configError(() => loadConfig(serviceSchema, { INTERNAL_AUTH_TRUSTED_KEYS: " , " }))).toMatch(
      /no trusted caller/,
    );
    expect(configError(() => loadConfig(serviceSchema, {}))).toMatch(/INTERNAL_AUTH_TRUSTED_KEYS: required/);
  });
});

describe("internal-auth-keygen", () => {
  it("prints two env lines that the caller and the service accept as a working pair", async () => {
    const root = path.resolve(__dirname, "..", "..", "..");
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "services/kit/src/internal-auth-keygen.ts", "admin"],
      { cwd: root },
    );
    const env = Object.fromEntries(
      stdout
        .split("\n")
        .filter((l) => /^[A-Z_]+=/.test(l))
        .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    );
    expect(Object.keys(env).sort()).toEqual(["INTERNAL_AUTH_PRIVATE_KEY", "INTERNAL_AUTH_TRUSTED_KEYS"]);
    const caller = loadConfig(callerSchema, env);
    const service = loadConfig(serviceSchema, env);
    const signed = signerOf("admin", caller.INTERNAL_AUTH_PRIVATE_KEY).sign(ctxA, {
      audience: "passport",
      method: METHOD,
      deadline: T0 + 1000,
    });
    const v = createContextVerifier({
      audience: "passport",
      trusted: service.INTERNAL_AUTH_TRUSTED_KEYS,
      now,
    });
    expect(v.verify(signed, METHOD, RID)).toMatchObject({ ok: true, caller: "admin", ctx: ctxA });
  });

  it("refuses a caller name that no service could trust", () => {
    expect(() => keygenLines("Gateway")).toThrow(/invalid caller name/);
    expect(keygenLines("gateway", gateway)).toContain(
      `INTERNAL_AUTH_TRUSTED_KEYS=gateway:${gateway.publicKey}\n`,
    );
  });
});
