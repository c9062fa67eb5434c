import { execFile } from "node:child_process";
import { createPrivateKey, sign } from "node:crypto";
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
  publicKeyOf,
  type ContextClaims,
  type Verification,
} from "./internal-auth";
import { keygenLines } from "./internal-auth-keygen";

const METHOD = "/dpp.passport.v1.PassportService/GetPassport";
const T0 = 1_750_000_000_000;

const gateway = generateInternalKeyPair();
const gatewayNext = generateInternalKeyPair();
const admin = generateInternalKeyPair();
const stranger = generateInternalKeyPair();

const ctxA: RequestContext = {
  requestId: "req_1",
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
  it("accepts a valid token and gives exactly the signed context and the caller", () => {
    const v = verifier().verify(token(), METHOD);
    expect(v).toEqual({ ok: true, caller: "gateway", ctx: ctxA, expiresAt: T0 + 5000 });
  });

  it("accepts a public context (request id only) and a second trusted caller", () => {
    const v = verifier().verify(
      token({ issuer: "admin", key: admin.privateKey, ctx: { requestId: "r" } }),
      METHOD,
    );
    expect(v).toEqual({ ok: true, caller: "admin", ctx: { requestId: "r" }, expiresAt: T0 + 5000 });
  });

  it("writes the documented claims, expiring at the deadline and never later than 60 s", () => {
    expect(claimsOf(token())).toEqual({
      iss: "gateway",
      aud: "passport",
      rpc: METHOD,
      iat: T0,
      exp: T0 + 5000,
      ctx: {
        request_id: "req_1",
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
    expect(claimsOf(token({ deadline: T0 + 10 * 60_000 })).exp).toBe(T0 + MAX_TOKEN_LIFETIME_MS);
  });

  it("accepts a token made by hand from the documented format", () => {
    const t = craft(
      { iss: "gateway", aud: "passport", rpc: METHOD, iat: T0, exp: T0 + 1000, ctx: { request_id: "req_h" } },
      gateway.privateKey,
    );
    expect(verifier().verify(t, METHOD)).toEqual({
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
      expect(reason(verifier().verify(withClaims(t, edit), METHOD))).toBe("bad_signature");
  });

  it("refuses an edited signature", () => {
    const t = token();
    const sig = Buffer.from(t.split(".")[1]!, "base64url");
    sig[10] = sig[10]! ^ 0x01;
    expect(reason(verifier().verify(`${t.split(".")[0]}.${sig.toString("base64url")}`, METHOD))).toBe(
      "bad_signature",
    );
  });

  it("refuses a trusted name signed with a key the service does not hold", () => {
    const v = verifier().verify(token({ key: stranger.privateKey }), METHOD);
    expect(v).toEqual({ ok: false, reason: "bad_signature", claimedIssuer: "gateway" });
  });

  it("refuses an issuer the service does not trust, whatever its key", () => {
    const v = verifier().verify(token({ issuer: "imports", key: stranger.privateKey }), METHOD);
    expect(v).toEqual({ ok: false, reason: "untrusted_issuer", claimedIssuer: "imports" });
    // a caller trusted by another service is not trusted here
    const onlyGateway = verifier({ gateway: [gateway.publicKey], admin: [] });
    expect(reason(onlyGateway.verify(token({ issuer: "admin", key: admin.privateKey }), METHOD))).toBe(
      "untrusted_issuer",
    );
  });

  it("refuses a token meant for another service or another method", () => {
    expect(reason(verifier().verify(token({ aud: "events" }), METHOD))).toBe("wrong_audience");
    expect(reason(verifier().verify(token(), "/dpp.passport.v1.PassportService/PublishPassport"))).toBe(
      "wrong_method",
    );
  });

  it("refuses an expired token, allowing 5 s of clock skew", () => {
    const t = token({ deadline: T0 + 1000 });
    clock = T0 + 1000 + 5000;
    expect(reason(verifier().verify(t, METHOD))).toBe("ok");
    clock = T0 + 1000 + 5001;
    expect(reason(verifier().verify(t, METHOD))).toBe("expired");
  });

  it("refuses a token issued in the future beyond the skew allowance", () => {
    clock = T0 + 5000;
    const within = token({ deadline: T0 + 10_000 });
    clock = T0 + 5001;
    const beyond = token({ deadline: T0 + 10_000 });
    clock = T0;
    expect(reason(verifier().verify(within, METHOD))).toBe("ok");
    expect(reason(verifier().verify(beyond, METHOD))).toBe("issued_in_future");
  });

  it("refuses a trusted caller's token that lives longer than 60 s or ends before it starts", () => {
    const base = { iss: "gateway", aud: "passport", rpc: METHOD, iat: T0, ctx: { request_id: "r" } };
    const long = craft({ ...base, exp: T0 + MAX_TOKEN_LIFETIME_MS + 1 }, gateway.privateKey);
    const inverted = craft({ ...base, exp: T0 - 1 }, gateway.privateKey);
    expect(reason(verifier().verify(long, METHOD))).toBe("bad_lifetime");
    expect(reason(verifier().verify(inverted, METHOD))).toBe("bad_lifetime");
  });

  it("refuses a missing token", () => {
    expect(verifier().verify(undefined, METHOD)).toEqual({ ok: false, reason: "missing" });
    expect(verifier().verify("", METHOD)).toEqual({ ok: false, reason: "missing" });
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
    expect(reason(verifier().verify(t, METHOD))).toBe("malformed");
  });

  it("refuses a well-signed token whose claims do not match the schema", () => {
    const base = { iss: "gateway", aud: "passport", rpc: METHOD, iat: T0, exp: T0 + 1000 };
    const badCtx = craft({ ...base, ctx: { request_id: "r", credential_kind: "root" } }, gateway.privateKey);
    const noCtx = craft(base, gateway.privateKey);
    const textTime = craft({ ...base, exp: String(T0 + 1000), ctx: { request_id: "r" } }, gateway.privateKey);
    for (const t of [badCtx, noCtx, textTime]) expect(reason(verifier().verify(t, METHOD))).toBe("malformed");
  });

  it("accepts every key of a caller while a key is rotated", () => {
    const v = verifier({ gateway: [gatewayNext.publicKey, gateway.publicKey], admin: [] });
    expect(reason(v.verify(token({ key: gateway.privateKey }), METHOD))).toBe("ok");
    expect(reason(v.verify(token({ key: gatewayNext.privateKey }), METHOD))).toBe("ok");
    expect(reason(v.verify(token({ key: admin.privateKey }), METHOD))).toBe("bad_signature");
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
    expect(reason(v.verify(token(), METHOD))).toBe("ok");
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
    expect(v.verify(signed, METHOD)).toMatchObject({ ok: true, caller: "admin", ctx: ctxA });
  });

  it("refuses a caller name that no service could trust", () => {
    expect(() => keygenLines("Gateway")).toThrow(/invalid caller name/);
    expect(keygenLines("gateway", gateway)).toContain(
      `INTERNAL_AUTH_TRUSTED_KEYS=gateway:${gateway.publicKey}\n`,
    );
  });
});
