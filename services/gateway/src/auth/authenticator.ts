import { ApiError, planLimits, type PlanContext } from "@dpp/kit";
import type { IdentityRepository, KeyRecord, OrganizationRecord } from "../store/identity.repository";
import { digestsEqual, parseKeyText, scopeAllows, type Scope } from "./keys";

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
  ) {}

  async authenticate(authorization: string | undefined): Promise<KeyRecord> {
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
    const parsed = parseKeyText(m[1]!);
    if (!parsed)
      throw new ApiError("invalid_key", "The API key is not a valid key: check that it was copied whole.", {
        reason: "format",
      });
    const key = await this.repo.findKeyByDigest(parsed.digest);
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
    const now = this.now().getTime();
    if (key.revoked_at)
      throw new ApiError("key_revoked", "The API key has been revoked.", {
        key_id: key.id,
        revoked_at: key.revoked_at.toISOString(),
      });
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
    if (organizationId === "-")
      throw new ApiError(
        "wildcard_not_supported",
        "The organization '-' is reserved; name one organization.",
        {
          issues: [{ source: { parameter: "organization" }, rule: "wildcard_not_supported" }],
        },
      );
    const notFound = () =>
      new ApiError(
        "organization_not_found_or_not_granted",
        "No such organization, or this key holds no grant on it; GET /v1/organizations lists the organizations it reaches.",
        { organization_id: organizationId },
      );
    if (organizationId.length === 0 || organizationId.length > MAX_ID_LENGTH) throw notFound();
    let scopes: string[] | undefined;
    let viaGrant = false;
    if (organizationId === key.organization_id) {
      scopes = key.scopes;
    } else {
      scopes = await this.repo.grantedScopes(key, organizationId);
      viaGrant = true;
    }
    if (!scopes) throw notFound();
    const organization = await this.repo.findOrganization(organizationId);
    if (!organization) throw notFound();
    return {
      organization,
      scopes,
      viaGrant,
      plan: planContext(organization.plan_id, organization.subscription_status),
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

/** The entitlements of a plan, as carried in the request context. */
export function planContext(planId: string, subscriptionStatus: string): PlanContext {
  const limits = planLimits(planId);
  return {
    planId,
    subscriptionStatus,
    publishLimit: limits.publishLimit,
    unitLimit: limits.unitLimit,
    documentLimit: limits.documentLimit,
  };
}
