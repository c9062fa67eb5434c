/**
 * Authority tokens (docs/decisions/0058-authority-credential.md): the credential of an inspector (a market
 * surveillance or customs authority) who is not a key holder of the brand. An operator issues one with the admin
 * CLI for one organization and mode, with an expiry; it reads that organization's authority-tier files and nothing
 * else: the gateway accepts it only on routes whose auth mode is `authority`, and the documents service answers it
 * authority-tier files only.
 *
 * Text: `dpp_at_<test|live>_<32 base62 characters><6-character checksum>`, as an API key but for its prefix, so
 * that a mistyped token is refused without a lookup and an API key is never taken for one. Only the SHA-256 of the
 * text and its last four characters are stored.
 */
import { randomBytes } from "node:crypto";
import { ApiError, newId } from "@dpp/contract";
import type { AuthorityTokenRecord, IdentityRepository } from "./identity.repository";
import { base62, checksum, digestOf, digestsEqual } from "./keys";

const TOKEN_RE = /^dpp_at_(test|live)_([0-9A-Za-z]{32})([0-9A-Za-z]{6})$/;
/** What an authority token's text starts with (an API key starts dpp_sk_). */
export const AUTHORITY_TOKEN_PREFIX = "dpp_at_";
/** The longest life an operator may give a token. */
export const AUTHORITY_TOKEN_MAX_SECONDS = 90 * 24 * 3600;

export function generateAuthorityTokenText(livemode: boolean): string {
  const prefix = `${AUTHORITY_TOKEN_PREFIX}${livemode ? "live" : "test"}_`;
  const body = base62(randomBytes(24), 32);
  return `${prefix}${body}${checksum(prefix + body)}`;
}

export function parseAuthorityTokenText(
  text: string,
): { livemode: boolean; digest: string; last4: string } | undefined {
  const m = TOKEN_RE.exec(text);
  if (!m) return undefined;
  const [, mode, body, sum] = m;
  if (checksum(`${AUTHORITY_TOKEN_PREFIX}${mode}_${body}`) !== sum) return undefined;
  return { livemode: mode === "live", digest: digestOf(text), last4: text.slice(-4) };
}

/** An authority token as the admin CLI shows it (never its text, which is shown once at issue). */
export function publicAuthorityToken(t: AuthorityTokenRecord) {
  return {
    object: "authority_token" as const,
    id: t.id,
    organization_id: t.organization_id,
    livemode: t.livemode,
    name: t.name,
    last4: t.last4,
    created_at: t.created_at.toISOString(),
    expires_at: t.expires_at.toISOString(),
    revoked_at: t.revoked_at ? t.revoked_at.toISOString() : null,
  };
}

/** Issues a token (its text is in the answer, once) for an organization that exists. */
export async function issueAuthorityToken(
  repo: IdentityRepository,
  o: { organizationId: string; livemode: boolean; name: string; expiresAt: Date },
  now = new Date(),
) {
  if (!(await repo.findOrganization(o.organizationId)))
    throw new ApiError("resource_not_found", `No organization ${o.organizationId}.`);
  const seconds = (o.expiresAt.getTime() - now.getTime()) / 1000;
  if (!(seconds > 0) || seconds > AUTHORITY_TOKEN_MAX_SECONDS)
    throw new ApiError(
      "validation_failed",
      `An authority token expires in the future and within ${AUTHORITY_TOKEN_MAX_SECONDS / 86400} days.`,
      { expires_at: o.expiresAt.toISOString() },
    );
  if (!o.name.trim())
    throw new ApiError("validation_failed", "Name the authority and the inspector who holds the token.");
  const text = generateAuthorityTokenText(o.livemode);
  const parsed = parseAuthorityTokenText(text)!;
  const record = await repo.insertAuthorityToken({
    id: newId("atk"),
    organization_id: o.organizationId,
    livemode: o.livemode,
    name: o.name,
    secret_digest: parsed.digest,
    last4: parsed.last4,
    expires_at: o.expiresAt,
  });
  return { token: text, record: publicAuthorityToken(record) };
}

export async function revokeAuthorityToken(repo: IdentityRepository, id: string) {
  const t = await repo.revokeAuthorityToken(id);
  if (!t) throw new ApiError("resource_not_found", `No authority token ${id}.`);
  return publicAuthorityToken(t);
}

/**
 * The authority token of an Authorization header, read from the store on every request (a revocation or an expiry
 * holds at once). Refusals are those of a key: `invalid_key` (missing, another scheme, not an authority token,
 * unknown), `key_revoked`, `key_expired`.
 */
export async function authorityOf(
  repo: IdentityRepository,
  authorization: string | undefined,
  now: () => Date,
): Promise<AuthorityTokenRecord> {
  if (authorization === undefined || authorization.trim() === "")
    throw new ApiError(
      "invalid_key",
      "No authority token was sent; use the header Authorization: Bearer <authority token>.",
      { reason: "missing" },
    );
  const m = /^Bearer +(\S+)\s*$/i.exec(authorization);
  if (!m)
    throw new ApiError(
      "invalid_key",
      "Send the authority token as Authorization: Bearer <authority token>.",
      {
        reason: "scheme",
      },
    );
  const parsed = parseAuthorityTokenText(m[1]!);
  if (!parsed)
    throw new ApiError(
      "invalid_key",
      "This operation takes an authority token (dpp_at_...), issued to an authority by the platform; an API key is not accepted here.",
      { reason: "format" },
    );
  const t = await repo.findAuthorityTokenByDigest(parsed.digest);
  if (!t || !digestsEqual(t.secret_digest, parsed.digest) || t.livemode !== parsed.livemode)
    throw new ApiError("invalid_key", "The authority token is not known.", { reason: "unknown" });
  if (t.revoked_at)
    throw new ApiError("key_revoked", "The authority token has been revoked.", {
      key_id: t.id,
      revoked_at: t.revoked_at.toISOString(),
    });
  if (t.expires_at.getTime() <= now().getTime())
    throw new ApiError("key_expired", "The authority token has expired.", {
      key_id: t.id,
      expired_at: t.expires_at.toISOString(),
    });
  return t;
}
