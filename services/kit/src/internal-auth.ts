/**
 * Internal authentication: a service trusts a request context only when the
 * call proves which service sent it (docs/decisions/0012-internal-authentication.md,
 * tokens reused across calls: docs/decisions/0025-reusable-context-tokens.md, by keyed
 * writes too: docs/decisions/0031-keyed-writes-reuse-tokens.md).
 *
 * The context travels only inside one signed token, in the gRPC metadata entry
 * `x-dpp-context`, all but the request id, which goes beside it in `x-dpp-request-id`,
 * and a write's Idempotency-Key and fingerprint, beside it in `x-dpp-idempotency-key`
 * and `x-dpp-idempotency-fingerprint` (the token signs that the call has a key, and
 * the caller organization its record is scoped to):
 *
 *   base64url(claims JSON) "." base64url(Ed25519 signature over those exact bytes)
 *   claims = { iss: caller name, aud: target service name, rpc: "/pkg.Service/Method",
 *              iat, exp (ms since epoch), ctx: the request context without its request id,
 *              Idempotency-Key and fingerprint (context.ts, wire form) }
 *
 * A call whose token is missing, malformed, signed by a caller or key the
 * service does not trust, meant for another service or method, expired or issued
 * in the future, whose request id is absent or not 1 to 200 characters, or whose
 * Idempotency-Key and fingerprint beside the token do not fit it (absent or
 * malformed when it signs a key, present when it signs none), is answered
 * UNAUTHENTICATED and its handler never runs. A token lives 30 s (or
 * until a later deadline) and never longer than 60 s; the signer reuses it for
 * the calls with the same audience, method and context while it outlives their
 * deadlines, and the verifier checks its signature once and its method, expiry
 * and issue time on every call.
 *
 * The kit's service template (service.ts) does all of the wiring below: a gRPC
 * service verifies with its own name as the audience and INTERNAL_AUTH_TRUSTED_KEYS;
 * `rt.client(...)` signs as the service with INTERNAL_AUTH_PRIVATE_KEY. By hand:
 *
 * WIRING A SERVICE (it receives calls):
 *
 *   const Config = z.object({ ...internalAuthServiceEnv, GRPC_ADDR: address });
 *   const verifier = createContextVerifier({
 *     audience: "passport",                           // this service's own name
 *     trusted: config.INTERNAL_AUTH_TRUSTED_KEYS,     // "gateway:<public key>,admin:<public key>"
 *   });
 *   addService(server, passportV1.PassportService, impl, log, verifier);   // verifier is required
 *   // a handler reads call.ctx (what the caller signed, with the call's request id) and call.caller ("gateway")
 *
 * WIRING A CALLER (it makes calls):
 *
 *   const Config = z.object({ ...internalAuthCallerEnv, PASSPORT_ADDR: address });
 *   const signer = createContextSigner({ issuer: "gateway", privateKey: config.INTERNAL_AUTH_PRIVATE_KEY });
 *   const passport = createClient(passportV1.PassportService, config.PASSPORT_ADDR, {
 *     signer, audience: "passport", deadlineMs: config.GRPC_DEADLINE_MS, log,
 *   });
 *   // every call carries its { context } signed for "passport", valid at least until the call's
 *   // deadline (a token signed earlier for the same method and context when it still is), and
 *   // the context's request id (and a write's Idempotency-Key and fingerprint) beside it
 *
 * PROBES: grpc.health.v1.Health stays open (Kubernetes cannot sign); use
 * createHealthClient(address) from grpc.ts, which sends no token.
 *
 * KEYS: `node --import tsx services/kit/src/internal-auth-keygen.ts gateway` prints
 * INTERNAL_AUTH_PRIVATE_KEY (the caller's secret: a base64url 32-byte Ed25519 seed,
 * or a path to a file holding it) and the caller's INTERNAL_AUTH_TRUSTED_KEYS entry
 * (name:base64url public key). A name may appear with several keys
 * ("gateway:<new>,gateway:<old>") while a key is being rotated.
 *
 * TESTS AND LOCAL RUNS: generateInternalKeyPair() gives a fresh pair;
 * formatTrustedKeys({ gateway: [pair.publicKey] }) gives the env value.
 *
 * WHAT CHANGED FOR EXISTING CODE:
 * - contextToMetadata/contextFromMetadata and the x-dpp-* headers are gone.
 * - createClient's `target` option is gone: `audience` also names the service in
 *   error details. Pass `log` so a refusal (internal_error, details.reason
 *   "upstream_rejected_caller") is logged with the service's reason.
 * - createClient(healthV1.Health, ...) for readiness polling becomes
 *   createHealthClient(address).check(service?).
 * - `migrate` must not require these variables: the Helm migrations Job gets neither.
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  verify,
  type KeyObject,
} from "node:crypto";
import fs from "node:fs";
import { z } from "zod";
import {
  contextFromWire,
  contextToWire,
  idempotencyOf,
  isRequestId,
  withRequestId,
  type IdempotencyBeside,
  type RequestContext,
  type SignedContext,
  type WireContext,
} from "./context";

/** The one metadata entry that carries the signed context. */
export const CONTEXT_METADATA_KEY = "x-dpp-context";
/** The metadata entry that carries the call's request id, beside the token and not signed. */
export const REQUEST_ID_METADATA_KEY = "x-dpp-request-id";
/** The metadata entry that carries a write's Idempotency-Key, beside the token and not signed. */
export const IDEMPOTENCY_KEY_METADATA_KEY = "x-dpp-idempotency-key";
/** The metadata entry that carries a write's request fingerprint, beside the token and not signed. */
export const IDEMPOTENCY_FINGERPRINT_METADATA_KEY = "x-dpp-idempotency-fingerprint";
/** No token lives longer than this, whatever the call's deadline. */
export const MAX_TOKEN_LIFETIME_MS = 60_000;
/** How far the caller's and the service's clocks may disagree. */
export const DEFAULT_CLOCK_SKEW_MS = 5_000;
/** A longer metadata value is refused before it is decoded. */
const MAX_TOKEN_LENGTH = 8 * 1024;

/** Service and caller names: lowercase, as in the registry of services ("gateway", "variants-units"). */
const NAME = /^[a-z][a-z0-9-]{0,62}$/;
/** 32 bytes in base64url without padding: an Ed25519 seed or public key. */
const KEY32 = /^[A-Za-z0-9_-]{43}$/;
const SEGMENT = /^[A-Za-z0-9_-]+$/;

/** Whether `name` can name a caller or a service. */
export function isServiceName(name: string): boolean {
  return NAME.test(name);
}
// PKCS#8 wrapping of a raw Ed25519 seed (RFC 8410): a JWK private key would also need the public half.
const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

/** Callers a service trusts: caller name → its base64url public keys (several during a rotation). */
export type TrustedKeys = Readonly<Record<string, readonly string[]>>;

/** The signed claims. */
export interface ContextClaims {
  iss: string;
  aud: string;
  rpc: string;
  iat: number;
  exp: number;
  ctx: WireContext;
}

export interface InternalKeyPair {
  /** base64url 32-byte Ed25519 seed: INTERNAL_AUTH_PRIVATE_KEY of the caller. */
  privateKey: string;
  /** base64url 32-byte Ed25519 public key: the caller's entry in INTERNAL_AUTH_TRUSTED_KEYS. */
  publicKey: string;
}

export function generateInternalKeyPair(): InternalKeyPair {
  const { privateKey } = generateKeyPairSync("ed25519");
  const jwk = privateKey.export({ format: "jwk" });
  return { privateKey: jwk.d!, publicKey: jwk.x! };
}

function importPrivateKey(seed: string): KeyObject {
  if (!KEY32.test(seed)) throw new Error("expected a base64url Ed25519 seed (43 characters)");
  return createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519_PREFIX, Buffer.from(seed, "base64url")]),
    format: "der",
    type: "pkcs8",
  });
}

function importPublicKey(key: string): KeyObject {
  if (!KEY32.test(key)) throw new Error("expected a base64url Ed25519 public key (43 characters)");
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: key }, format: "jwk" });
}

/** The public key of a private key (seed), both base64url. */
export function publicKeyOf(privateKey: string): string {
  return createPublicKey(importPrivateKey(privateKey)).export({ format: "jwk" }).x!;
}

export interface SignOptions {
  /** The target service's name: the token is refused by every other service. */
  audience: string;
  /** The full gRPC method path, "/dpp.passport.v1.PassportService/GetPassport". */
  method: string;
  /**
   * The call's deadline (ms since epoch): the token is valid at least until then (never longer than
   * 60 s). Without one, the token must live the longest lifetime.
   */
  deadline?: number;
}

export interface ContextSigner {
  readonly issuer: string;
  /**
   * The metadata value that proves this caller sent `ctx` (all of it but its request id and its
   * Idempotency-Key and fingerprint, which travel beside the token) to `audience` for `method`. A
   * token signed earlier for the same audience, method and signed context is given again while it
   * stays valid past the deadline.
   */
  sign(ctx: SignedContext, options: SignOptions): string;
  /** How many tokens are kept for reuse (at most the `cacheSize` the signer was built with). */
  readonly cached: number;
}

interface Minted {
  token: string;
  exp: number;
}

/**
 * A map of at most `max` entries that forgets the oldest first. Entries are put in the order
 * they were made, which is also (nearly) the order they expire in: `put` first drops expired
 * entries from the front, then the oldest while the map is full.
 */
class BoundedCache<V extends { exp: number }> {
  private readonly entries = new Map<string, V>();

  constructor(
    readonly max: number,
    /** How long past its `exp` an entry is still of use. */
    private readonly graceMs: number,
  ) {
    if (!Number.isInteger(max) || max < 0) throw new Error(`cache size must be an integer ≥ 0, got ${max}`);
  }

  get(key: string): V | undefined {
    return this.entries.get(key);
  }

  put(key: string, value: V, now: number): void {
    if (this.max === 0) return;
    this.entries.delete(key);
    for (const [k, v] of this.entries) {
      if (v.exp + this.graceMs >= now && this.entries.size < this.max) break;
      this.entries.delete(k);
    }
    this.entries.set(key, value);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}

/** A minted token lives this long (or until a later deadline, within 60 s) and is reused meanwhile. */
export const TOKEN_REUSE_WINDOW_MS = 30_000;
/** How many tokens a signer keeps, and how many verified tokens a verifier keeps, by default. */
export const DEFAULT_TOKEN_CACHE_SIZE = 1000;

/**
 * A signer for one caller; the private key is imported once. A token is minted for a window of
 * TOKEN_REUSE_WINDOW_MS (or until the call's deadline when that is later, never past 60 s) and
 * kept, by audience, method and signed context, for the calls that follow while it lives past their
 * deadlines. Writes with an Idempotency-Key share a token too: their keys and fingerprints are not
 * signed, only that they have one and their caller organization.
 */
export function createContextSigner(o: {
  issuer: string;
  privateKey: string;
  now?: () => number;
  /** How many tokens are kept for reuse (0: none, every call signs). */
  cacheSize?: number;
}): ContextSigner {
  if (!NAME.test(o.issuer)) throw new Error(`invalid caller name ${JSON.stringify(o.issuer)}`);
  const key = importPrivateKey(o.privateKey);
  const now = o.now ?? Date.now;
  const cache = new BoundedCache<Minted>(o.cacheSize ?? DEFAULT_TOKEN_CACHE_SIZE, 0);
  const mint = (claims: ContextClaims): string => {
    const payload = Buffer.from(JSON.stringify(claims), "utf8");
    return `${payload.toString("base64url")}.${sign(null, payload, key).toString("base64url")}`;
  };
  return {
    issuer: o.issuer,
    get cached() {
      return cache.size;
    },
    sign(ctx, { audience, method, deadline }) {
      const iat = now();
      const latest = iat + MAX_TOKEN_LIFETIME_MS;
      const until = deadline ?? latest;
      const wire = contextToWire(ctx);
      const cacheKey = `${audience} ${method} ${JSON.stringify(wire)}`;
      const hit = cache.get(cacheKey);
      if (hit && hit.exp >= until) return hit.token;
      const exp = Math.min(Math.max(iat + TOKEN_REUSE_WINDOW_MS, until), latest);
      const token = mint({ iss: o.issuer, aud: audience, rpc: method, iat, exp, ctx: wire });
      cache.put(cacheKey, { token, exp }, iat);
      return token;
    },
  };
}

/** Why a token was refused (logged by the service; never the client's business). */
export type RejectionReason =
  | "missing"
  | "malformed"
  | "untrusted_issuer"
  | "bad_signature"
  | "wrong_audience"
  | "wrong_method"
  | "bad_lifetime"
  | "issued_in_future"
  | "expired";

export type Verification =
  | { ok: true; caller: string; ctx: RequestContext; expiresAt: number }
  | { ok: false; reason: RejectionReason; claimedIssuer?: string };

export interface ContextVerifier {
  /** This service's name. */
  readonly audience: string;
  /** Names of the trusted callers. */
  readonly callers: readonly string[];
  /**
   * Checks one call: its token (`undefined` when the call carried none) for `method`, its request
   * id (`undefined` when absent or sent twice), which must be 1 to 200 characters, and the
   * Idempotency-Key and fingerprint beside the token (`undefined` when the call carried neither),
   * which must be there, valid, exactly when the token signs an idempotency (context.ts,
   * idempotencyOf). The context given back is the call's own object.
   */
  verify(
    token: string | undefined,
    method: string,
    requestId: string | undefined,
    idempotency?: IdempotencyBeside,
  ): Verification;
  /** How many verified tokens are kept (at most the `cacheSize` the verifier was built with). */
  readonly cached: number;
}

const claimsSchema = z.object({
  iss: z.string(),
  aud: z.string(),
  rpc: z.string(),
  iat: z.number().int().nonnegative(),
  exp: z.number().int().nonnegative(),
  ctx: z.unknown(),
});

/** What a token proves once its signature, claims and audience have been checked. */
interface Proven {
  caller: string;
  rpc: string;
  iat: number;
  exp: number;
  /** Frozen: shared by every call that presents the token; each call gets a copy (withRequestId). */
  ctx: Readonly<SignedContext>;
}

function deepFreeze<T extends object>(value: T): Readonly<T> {
  for (const v of Object.values(value)) if (v !== null && typeof v === "object") deepFreeze(v as object);
  return Object.freeze(value);
}

/**
 * A verifier for one service; every trusted public key is imported once. A token that passed every
 * check is kept (by its exact text, up to `cacheSize`, while it lives) so that its signature,
 * claims and context are checked and parsed once; what depends on the call or the time (the
 * method, expiry and issue time with the clock skew, the request id, the Idempotency-Key and
 * fingerprint) is checked on every call. A refused token is never kept, nor one of an earlier
 * caller that signed a write's key and fingerprint (it serves that one write).
 */
export function createContextVerifier(o: {
  audience: string;
  trusted: TrustedKeys;
  clockSkewMs?: number;
  now?: () => number;
  /** How many verified tokens are kept (0: none, every call verifies its signature). */
  cacheSize?: number;
}): ContextVerifier {
  if (!NAME.test(o.audience)) throw new Error(`invalid service name ${JSON.stringify(o.audience)}`);
  const keys = new Map<string, KeyObject[]>();
  for (const [name, list] of Object.entries(o.trusted)) {
    if (!NAME.test(name)) throw new Error(`invalid caller name ${JSON.stringify(name)}`);
    if (list.length > 0) keys.set(name, list.map(importPublicKey));
  }
  if (keys.size === 0) throw new Error(`${o.audience} trusts no caller: give it at least one public key`);
  const skew = o.clockSkewMs ?? DEFAULT_CLOCK_SKEW_MS;
  const now = o.now ?? Date.now;
  const cache = new BoundedCache<Proven>(o.cacheSize ?? DEFAULT_TOKEN_CACHE_SIZE, skew);
  const refuse = (reason: RejectionReason, claimedIssuer?: string): Verification =>
    claimedIssuer === undefined ? { ok: false, reason } : { ok: false, reason, claimedIssuer };

  /** The checks that depend on the token alone: format, issuer, signature, claims, audience. */
  function prove(token: string): Proven | Verification {
    if (token.length > MAX_TOKEN_LENGTH) return refuse("malformed");
    const parts = token.split(".");
    if (parts.length !== 2 || !SEGMENT.test(parts[0]!) || !SEGMENT.test(parts[1]!))
      return refuse("malformed");
    const payload = Buffer.from(parts[0]!, "base64url");
    const signature = Buffer.from(parts[1]!, "base64url");
    let raw: unknown;
    try {
      raw = JSON.parse(payload.toString("utf8"));
    } catch {
      return refuse("malformed");
    }
    // The issuer picks the keys to try; nothing else is believed before the signature holds.
    const iss = raw !== null && typeof raw === "object" ? (raw as { iss?: unknown }).iss : undefined;
    if (typeof iss !== "string") return refuse("malformed");
    const candidates = keys.get(iss);
    if (!candidates) return refuse("untrusted_issuer", iss.slice(0, 64));
    if (signature.length !== 64 || !candidates.some((k) => verify(null, payload, k, signature)))
      return refuse("bad_signature", iss);

    const claims = claimsSchema.safeParse(raw);
    if (!claims.success) return refuse("malformed", iss);
    const { aud, rpc, iat, exp } = claims.data;
    const ctx = contextFromWire(claims.data.ctx);
    if (!ctx) return refuse("malformed", iss);
    if (aud !== o.audience) return refuse("wrong_audience", iss);
    return { caller: iss, rpc, iat, exp, ctx: deepFreeze(ctx) };
  }

  return {
    audience: o.audience,
    callers: [...keys.keys()],
    get cached() {
      return cache.size;
    },
    verify(token, method, requestId, beside) {
      if (token === undefined || token === "") return refuse("missing");
      const kept = cache.get(token);
      let proven: Proven;
      if (kept) proven = kept;
      else {
        const p = prove(token);
        if ("ok" in p) return p;
        proven = p;
      }
      const { caller, rpc, iat, exp } = proven;
      if (rpc !== method) return refuse("wrong_method", caller);
      if (exp < iat || exp - iat > MAX_TOKEN_LIFETIME_MS) return refuse("bad_lifetime", caller);
      const t = now();
      if (iat > t + skew) return refuse("issued_in_future", caller);
      if (t > exp + skew) {
        if (kept) cache.delete(token);
        return refuse("expired", caller);
      }
      if (!isRequestId(requestId)) return refuse("malformed", caller);
      const signedIdem = proven.ctx.idempotency;
      const idempotency = idempotencyOf(signedIdem, beside);
      if (idempotency === null) return refuse("malformed", caller);
      // A token whose claims hold a write's key (an earlier caller's) is not presented again.
      if (!kept && signedIdem?.key === undefined) cache.put(token, proven, t);
      return {
        ok: true,
        caller,
        ctx: withRequestId(proven.ctx, requestId, idempotency),
        expiresAt: exp,
      };
    },
  };
}

/**
 * Parses "gateway:<key>,gateway:<older key>,admin:<key>" (commas or whitespace
 * between entries). Returns the keys by caller, or the problems found.
 */
function parseTrusted(text: string): { trusted: Record<string, string[]>; problems: string[] } {
  const trusted: Record<string, string[]> = {};
  const problems: string[] = [];
  const entries = text.split(/[\s,]+/).filter(Boolean);
  entries.forEach((entry, i) => {
    const at = `entry ${i + 1} (${JSON.stringify(entry.slice(0, 80))})`;
    const colon = entry.indexOf(":");
    if (colon === -1) return problems.push(`${at}: expected <caller name>:<base64url public key>`);
    const name = entry.slice(0, colon);
    const key = entry.slice(colon + 1);
    if (!NAME.test(name)) return problems.push(`${at}: the caller name must match ${NAME.source}`);
    try {
      importPublicKey(key);
    } catch {
      return problems.push(`${at}: not a base64url Ed25519 public key (43 characters)`);
    }
    const list = (trusted[name] ??= []);
    if (!list.includes(key)) list.push(key);
  });
  if (entries.length === 0)
    problems.push("no trusted caller: at least one <caller name>:<public key> is required");
  return { trusted, problems };
}

/** parseTrusted, throwing on the first problem. */
export function parseTrustedKeys(text: string): TrustedKeys {
  const { trusted, problems } = parseTrusted(text);
  if (problems.length) throw new Error(`INTERNAL_AUTH_TRUSTED_KEYS: ${problems.join("; ")}`);
  return trusted;
}

/** The INTERNAL_AUTH_TRUSTED_KEYS value of a set of trusted keys. */
export function formatTrustedKeys(trusted: TrustedKeys): string {
  return Object.entries(trusted)
    .flatMap(([name, list]) => list.map((k) => `${name}:${k}`))
    .join(",");
}

/**
 * The seed itself, or the seed read from the file the value names. Never echoes
 * the value in a message: a mistyped key is still a secret.
 */
function readPrivateKey(value: string): { key?: string; problem?: string } {
  const v = value.trim();
  if (KEY32.test(v)) return { key: v };
  let text: string;
  try {
    text = fs.readFileSync(v, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "unreadable";
    return {
      problem: `neither a base64url Ed25519 seed (43 characters) nor a readable file (${code}); generate one with services/kit/src/internal-auth-keygen.ts`,
    };
  }
  const k = text.trim();
  if (KEY32.test(k)) return { key: k };
  return { problem: "the file does not hold a base64url Ed25519 seed (43 characters)" };
}

/** The variables of a process that calls services; spread into its config schema. */
export const internalAuthCallerEnv = {
  /** base64url Ed25519 seed of this caller, or a path to a file holding it (a mounted Secret). */
  INTERNAL_AUTH_PRIVATE_KEY: z
    .string({
      error:
        "required: this caller's base64url Ed25519 seed, or a path to a file holding it (services/kit/src/internal-auth-keygen.ts makes one)",
    })
    .transform((value, ctx) => {
      const { key, problem } = readPrivateKey(value);
      if (key !== undefined) return key;
      ctx.addIssue({ code: "custom", message: problem ?? "invalid" });
      return z.NEVER;
    }),
};

/** The variables of a service that receives calls; spread into its config schema. */
export const internalAuthServiceEnv = {
  /** "<caller>:<base64url public key>" entries, comma-separated; a caller may have several keys (rotation). */
  INTERNAL_AUTH_TRUSTED_KEYS: z
    .string({
      error:
        'required: the callers this service trusts, "<caller>:<base64url public key>" comma-separated (e.g. "gateway:...,admin:...")',
    })
    .transform((text, ctx): TrustedKeys => {
      const { trusted, problems } = parseTrusted(text);
      for (const message of problems) ctx.addIssue({ code: "custom", message });
      return problems.length ? z.NEVER : trusted;
    }),
};
