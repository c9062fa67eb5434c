/**
 * Grants (docs/decisions/0002): a managing organization lets one of its keys
 * act on a client, with scopes no wider than the key's own. Used by the HTTP
 * grant endpoints and the admin CLI alike, so the rules live here once.
 */
import { ApiError, validationFailed, type Issue } from "@dpp/contract";
import { isScope, scopeAllows, SCOPES, type Scope } from "./keys";
import type { GrantRecord, IdentityRepository, KeyRecord, LinkRecord } from "./identity.repository";

/** Never granted for a client: key administration stays with each organization. */
export const NEVER_GRANTED: readonly Scope[] = ["keys:admin"];
const MAX_ID_LENGTH = 255;

export interface Grantor {
  /** The calling key's organization. */
  organizationId: string;
  /** The calling key's mode: the granted key must be of the same mode. */
  livemode: boolean;
  /** How the caller relates to the client (see Authenticator.resolveGrantTarget). */
  role: "manager" | "client" | "former_manager";
  link: LinkRecord | undefined;
}

export interface GrantJson {
  object: "grant";
  organization_id: string;
  key_id: string;
  scopes: string[];
  granted_at: string;
}

export interface EndedGrantJson {
  object: "grant";
  organization_id: string;
  key_id: string;
  status: "revoked";
}

export function grantJson(g: GrantRecord): GrantJson {
  return {
    object: "grant",
    organization_id: g.organization_id,
    key_id: g.key_id,
    scopes: g.scopes,
    granted_at: g.granted_at.toISOString(),
  };
}

/** The POST body, checked: {key_id, scopes}; nothing else. */
export function parseGrantBody(body: unknown): { keyId: string; scopes: Scope[] } {
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw validationFailed([{ source: { pointer: "" }, rule: "type", message: "expected an object" }]);
  const b = body as Record<string, unknown>;
  const issues: Issue[] = [];
  for (const k of Object.keys(b))
    if (k !== "key_id" && k !== "scopes")
      issues.push({
        source: { pointer: `/${k}` },
        rule: "unknown_field",
        message: `${k} is not a field of a grant`,
      });
  if (b.key_id === undefined) issues.push({ source: { pointer: "/key_id" }, rule: "required" });
  else if (typeof b.key_id !== "string" || b.key_id.length === 0 || b.key_id.length > MAX_ID_LENGTH)
    issues.push({ source: { pointer: "/key_id" }, rule: "type", message: "a key id: 1 to 255 characters" });
  const scopes: Scope[] = [];
  if (b.scopes === undefined) issues.push({ source: { pointer: "/scopes" }, rule: "required" });
  else if (!Array.isArray(b.scopes))
    issues.push({ source: { pointer: "/scopes" }, rule: "type", message: "an array of scopes" });
  else if (b.scopes.length === 0)
    issues.push({ source: { pointer: "/scopes" }, rule: "min_items", message: "at least one scope" });
  else
    b.scopes.forEach((s: unknown, i) => {
      const pointer = `/scopes/${i}`;
      if (typeof s !== "string" || !isScope(s))
        issues.push({ source: { pointer }, rule: "enum", message: `one of ${SCOPES.join(", ")}` });
      else if (NEVER_GRANTED.includes(s))
        issues.push({
          source: { pointer },
          rule: "not_grantable",
          message: `${s} is never granted for a client`,
        });
      else if (scopes.includes(s))
        issues.push({ source: { pointer }, rule: "unique", message: `${s} is repeated` });
      else scopes.push(s);
    });
  if (issues.length) throw validationFailed(issues);
  return { keyId: b.key_id as string, scopes };
}

const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((x) => b.includes(x));

function notSeated(grantor: Grantor, clientId: string): ApiError {
  const reason =
    grantor.role === "client"
      ? "own_organization"
      : grantor.role === "former_manager"
        ? "arrangement_ended"
        : "not_managing";
  return new ApiError(
    "grantor_not_seated",
    reason === "own_organization"
      ? "An organization grants access to the clients it manages, not to itself."
      : "The calling key's organization no longer manages this client.",
    { organization_id: clientId, reason },
  );
}

export class Grants {
  constructor(private readonly repo: IdentityRepository) {}

  /**
   * Creates a grant. An active grant with the same scopes answers as created
   * (a retried POST is harmless); with other scopes it is grant_conflict: end
   * it first (DELETE), then grant again.
   */
  async create(
    grantor: Grantor,
    clientId: string,
    body: unknown,
  ): Promise<{ grant: GrantJson; created: boolean }> {
    if (grantor.role !== "manager") throw notSeated(grantor, clientId);
    const { keyId, scopes } = parseGrantBody(body);
    const key = await this.repo.findKey(keyId);
    this.checkGrantable(key, keyId, grantor);
    const exceeding = scopes.filter((s) => !scopeAllows(key!.scopes, s));
    if (exceeding.length)
      throw new ApiError(
        "scope_exceeds_key",
        `The key does not hold ${exceeding.join(", ")} on its own organization, so it cannot be granted ${exceeding.length === 1 ? "it" : "them"} here.`,
        {
          key_id: keyId,
          exceeding_scopes: exceeding,
          key_scopes: key!.scopes,
          issues: exceeding.map((s) => ({
            source: { pointer: `/scopes/${scopes.indexOf(s)}` },
            rule: "scope_exceeds_key",
          })),
        },
      );
    if (scopes.includes("filings:write") && !grantor.link?.france_mandate_confirmed_at)
      throw new ApiError(
        "france_mandate_required",
        "filings:write needs the client's written authorisation (French filing mandate) to be confirmed first.",
        { organization_id: clientId, scope: "filings:write" },
      );
    const out = await this.repo.createGrant(keyId, clientId, scopes, grantor.organizationId);
    if ("linkEnded" in out) throw notSeated({ ...grantor, role: "former_manager" }, clientId);
    if (!out.created && !sameSet(out.grant.scopes, scopes))
      throw new ApiError(
        "grant_conflict",
        "The key already holds a grant on this organization with other scopes; end it (DELETE) before granting again.",
        {
          key_id: keyId,
          organization_id: clientId,
          existing_scopes: out.grant.scopes,
          requested_scopes: scopes,
        },
      );
    return { grant: grantJson(out.grant), created: out.created };
  }

  /**
   * Ends one grant. The managing organization ends its own keys' grants; the
   * client may end any key's access to itself. Objects of the other mode and
   * other organizations' keys are invisible (404 resource_not_found).
   */
  async revoke(grantor: Grantor, clientId: string, keyId: string): Promise<EndedGrantJson> {
    const missing = () =>
      new ApiError("resource_not_found", "This key holds no grant on this organization.", {
        organization_id: clientId,
        key_id: keyId,
      });
    const key = keyId.length <= MAX_ID_LENGTH ? await this.repo.findKey(keyId) : undefined;
    if (!key || key.livemode !== grantor.livemode) throw missing();
    if (grantor.role !== "client" && key.organization_id !== grantor.organizationId) throw missing();
    const ended = await this.repo.revokeGrant(keyId, clientId);
    if (!ended) {
      const row = await this.repo.findGrant(keyId, clientId);
      if (!row) throw missing();
      // Already ended: answering the same again makes a retried DELETE harmless.
    }
    return { object: "grant", organization_id: clientId, key_id: keyId, status: "revoked" };
  }

  private checkGrantable(key: KeyRecord | undefined, keyId: string, grantor: Grantor): void {
    const refuse = (reason: string, message: string) =>
      new ApiError("key_not_grantable", message, { key_id: keyId, reason });
    if (!key || key.organization_id !== grantor.organizationId)
      throw refuse("not_owned", "The key is not a key of the calling organization.");
    if (key.livemode !== grantor.livemode)
      throw refuse("other_mode", "The key belongs to the other mode than the calling key.");
    if (key.revoked_at) throw refuse("revoked", "The key has been revoked.");
    if (key.expires_at && key.expires_at.getTime() <= Date.now())
      throw refuse("expired", "The key has expired.");
    if (key.rotated_at) throw refuse("rotated", "The key was replaced by rotation; grant its replacement.");
  }
}
