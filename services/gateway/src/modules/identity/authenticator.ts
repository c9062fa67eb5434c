import { ApiError, planLimits } from "@dpp/contract";
import { type PlanContext } from "@dpp/kit";
import type { IdentityRepository, KeyRecord, LinkRecord, OrganizationRecord } from "./identity.repository";
import { digestsEqual, parseKeyText, scopeAllows, type ParsedKey, type Scope } from "./keys";
import { grantKey, type CachedOrganization, type IdentityCache } from "./identity-cache";
import { AUTHORITY_TOKEN_PREFIX, authorityOf } from "./authority";
import type { AuthorityTokenRecord } from "./identity.repository";

export interface OrganizationAccess {
  organization: OrganizationRecord;
  /** Scopes the key holds on this organization (its own scopes, or the grant's). */
  scopes: string[];
  viaGrant: boolean;
  plan: PlanContext;
}

const MAX_ID_LENGTH = 255;

/**
 * Key authentication and organization resolution. Every refusal is decided
 * here, from the key record alone, before any service is called.
 */
export class Authenticator {
  constructor(
    private readonly repo: IdentityRepository,
    private readonly now: () => Date = () => new Date(),
    private readonly cache?: IdentityCache,
  ) {}

  // What every request reads: from the short-lived cache (identity-cache.ts) when there is one, else the store.

  private keyByDigest(digest: string): Promise<KeyRecord | undefined> {
    const load = () => this.repo.findKeyByDigest(digest);
    return this.cache ? this.cache.keyByDigest(digest, load) : load();
  }

  private organization(id: string): Promise<CachedOrganization | undefined> {
    const load = async () => {
      const record = await this.repo.findOrganization(id);
      return record && { record, plan: planContext(record.plan_id, record.subscription_status) };
    };
    return this.cache ? this.cache.organizations.getOrLoad(id, load) : load();
  }

  private async grantedScopes(key: KeyRecord, clientId: string): Promise<string[] | undefined> {
    const load = async () => {
      const scopes = await this.repo.grantedScopes(key, clientId);
      return scopes && { clientId, scopes };
    };
    const grant = this.cache
      ? await this.cache.grants.getOrLoad(grantKey(key.id, clientId), load)
      : await load();
    return grant?.scopes;
  }

  async authenticate(authorization: string | undefined): Promise<KeyRecord> {
    return this.keyOf(authorization);
  }

  /**
   * The key of an Authorization header, as `authenticate` gives it, but at once (no promise) when the key is
   * cached: what every request asks first. A refusal is thrown.
   */
  keyOf(authorization: string | undefined): KeyRecord | Promise<KeyRecord> {
    if (authorization === undefined || authorization.trim() === "")
      throw new ApiError(
        "invalid_key",
        "No API key was sent; use the header Authorization: Bearer <API key>.",
        {
          reason: "missing",
        },
      );
    const m = /^Bearer +(\S+)\s*$/i.exec(authorization);
    if (!m)
      throw new ApiError(
        "invalid_key",
        "Send the API key as Authorization: Bearer <API key>; nothing else is accepted.",
        {
          reason: "scheme",
        },
      );
    // A digest in the key cache was checked when it was cached: its checksum is not computed again.
    const cache = this.cache;
    let cached: KeyRecord | undefined;
    const parsed = parseKeyText(
      m[1]!,
      cache && ((digest) => (cached = cache.keys.get(digest)) !== undefined),
    );
    if (!parsed)
      throw new ApiError(
        "invalid_key",
        m[1]!.startsWith(AUTHORITY_TOKEN_PREFIX)
          ? "An authority token reads only authority-tier files, through GET /v1/authority/organizations/{organization}/documents/{id}/download; every other operation takes an API key."
          : "The API key is not a valid key: check that it was copied whole.",
        { reason: "format" },
      );
    if (cached) return this.usable(cached, parsed);
    // A key text refused as unknown a moment ago is refused again without a lookup.
    if (cache?.unknownKeys.get(parsed.digest)) return this.usable(undefined, parsed);
    return this.keyByDigest(parsed.digest).then((key) => this.usable(key, parsed));
  }

  /** The authority token of an Authorization header (routes whose auth mode is `authority`); a refusal is thrown. */
  authorityOf(authorization: string | undefined): Promise<AuthorityTokenRecord> {
    return authorityOf(this.repo, authorization, this.now);
  }

  /**
   * The organization in the path of an `authority` route: the token's own, else the same 404 as for an
   * organization a key does not reach.
   */
  authorityAccess(token: AuthorityTokenRecord, organizationId: string): void {
    checkOrganizationParam(organizationId);
    if (organizationId !== token.organization_id) throw notFound(organizationId);
  }

  /** The key found for a key text, if it may be used now. */
  private usable(key: KeyRecord | undefined, parsed: ParsedKey): KeyRecord {
    if (!key || !digestsEqual(key.secret_digest, parsed.digest))
      throw new ApiError("invalid_key", "The API key is not known.", { reason: "unknown" });
    if (key.livemode !== parsed.livemode)
      throw new ApiError(
        "mode_mismatch",
        "The key's prefix names one mode but the key belongs to the other.",
        {
          key_prefix_mode: parsed.livemode ? "live" : "test",
        },
      );
    if (key.revoked_at)
      throw new ApiError("key_revoked", "The API key has been revoked.", {
        key_id: key.id,
        revoked_at: key.revoked_at.toISOString(),
      });
    if (!key.expires_at && !key.rotation_overlap_ends_at) return key;
    const now = this.now().getTime();
    if (key.expires_at && key.expires_at.getTime() <= now)
      throw new ApiError("key_expired", "The API key has expired.", {
        key_id: key.id,
        expired_at: key.expires_at.toISOString(),
      });
    if (key.rotation_overlap_ends_at && key.rotation_overlap_ends_at.getTime() <= now)
      throw new ApiError(
        "key_rotated",
        "The API key was replaced by rotation and its overlap window has closed.",
        {
          key_id: key.id,
          replaced_by_key_id: key.replaced_by_key_id,
          overlap_ended_at: key.rotation_overlap_ends_at.toISOString(),
        },
      );
    return key;
  }

  /**
   * The organization named in the path: the key's own, or a client it holds a
   * grant on. Anything else, including an organization that does not exist,
   * answers the same 404.
   */
  async resolveOrganization(key: KeyRecord, organizationId: string): Promise<OrganizationAccess> {
    return this.accessOf(key, organizationId);
  }

  /**
   * The access `resolveOrganization` gives, at once (no promise) when what it needs is cached: what every request
   * to an organization asks. A refusal is thrown.
   */
  accessOf(key: KeyRecord, organizationId: string): OrganizationAccess | Promise<OrganizationAccess> {
    checkOrganizationParam(organizationId);
    if (organizationId.length === 0 || organizationId.length > MAX_ID_LENGTH) throw notFound(organizationId);
    const cache = this.cache;
    if (cache) {
      const own = organizationId === key.organization_id;
      const scopes = own ? key.scopes : cache.grants.get(grantKey(key.id, organizationId))?.scopes;
      const organization = scopes && cache.organizations.get(organizationId);
      if (scopes && organization)
        return { organization: organization.record, scopes, viaGrant: !own, plan: organization.plan };
    }
    return this.loadAccess(key, organizationId);
  }

  private async loadAccess(key: KeyRecord, organizationId: string): Promise<OrganizationAccess> {
    let scopes: string[] | undefined;
    let viaGrant = false;
    if (organizationId === key.organization_id) {
      scopes = key.scopes;
    } else {
      scopes = await this.grantedScopes(key, organizationId);
      viaGrant = true;
    }
    if (!scopes) throw notFound(organizationId);
    const organization = await this.organization(organizationId);
    if (!organization) throw notFound(organizationId);
    return { organization: organization.record, scopes, viaGrant, plan: organization.plan };
  }

  /**
   * The grant endpoints. The organization in the path is the client; the key
   * acts with the scopes it holds on its OWN organization (never through a
   * grant), as the spec says. Who may reach the client here:
   * - a key of an organization that manages the client (accepted link): role "manager";
   * - the client's own key: role "client" (it may end a key's access itself);
   * - a former manager (link ended): role "former_manager" (refused later with grantor_not_seated).
   * Anything else is the same 404 as for a nonexistent organization.
   */
  async resolveGrantTarget(key: KeyRecord, organizationId: string): Promise<GrantTargetAccess> {
    checkOrganizationParam(organizationId);
    const client =
      organizationId.length <= MAX_ID_LENGTH ? (await this.organization(organizationId))?.record : undefined;
    if (!client) throw notFound(organizationId);
    const own = await this.organization(key.organization_id);
    if (!own) throw notFound(organizationId);
    let role: GrantTargetAccess["role"];
    let link: LinkRecord | undefined;
    if (client.id === key.organization_id) role = "client";
    else {
      // Read from the store: who may grant is decided on the link as it is now (grant writes are rare).
      link = await this.repo.findLink(key.organization_id, client.id);
      if (!link) throw notFound(organizationId);
      role = link.status === "accepted" ? "manager" : "former_manager";
    }
    return {
      organization: own.record,
      client,
      link,
      role,
      scopes: key.scopes,
      viaGrant: false,
      plan: own.plan,
    };
  }

  requireScope(access: OrganizationAccess, scope: Scope): void {
    if (!scopeAllows(access.scopes, scope))
      throw new ApiError(
        "insufficient_scope",
        `This endpoint requires the scope ${scope}, which the key lacks here.`,
        {
          required_scope: scope,
          granted_scopes: access.scopes,
        },
      );
  }
}

/** Access to the grant endpoints (see resolveGrantTarget); `organization` is the caller's own. */
export interface GrantTargetAccess extends OrganizationAccess {
  client: OrganizationRecord;
  link: LinkRecord | undefined;
  role: "manager" | "client" | "former_manager";
}

function checkOrganizationParam(organizationId: string): void {
  if (organizationId === "-")
    throw new ApiError("wildcard_not_supported", "The organization '-' is reserved; name one organization.", {
      issues: [{ source: { parameter: "organization" }, rule: "wildcard_not_supported" }],
    });
}

function notFoundError(organizationId: string): ApiError {
  return new ApiError(
    "organization_not_found_or_not_granted",
    "No such organization, or this key holds no grant on it; GET /v1/organizations lists the organizations it reaches.",
    { organization_id: organizationId },
  );
}
const notFound = notFoundError;

/** The entitlements of a plan, as carried in the request context. */
export function planContext(planId: string, subscriptionStatus: string): PlanContext {
  const limits = planLimits(planId);
  return {
    planId,
    subscriptionStatus,
    publishLimit: limits.publishLimit,
    unitLimit: limits.unitLimit,
    documentLimit: limits.documentLimit,
    destructiveOperationCap: limits.destructiveOperationCap,
  };
}
