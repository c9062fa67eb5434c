/**
 * Administration of organizations, keys, managing links, grants and plans.
 * Used by the admin CLI and the stack runner; never exposed over HTTP.
 */
import { ApiError, newId, PLAN_IDS, SUBSCRIPTION_STATUSES } from "@dpp/contract";
import type { IdentityRepository, KeyRecord, OrganizationRecord } from "./identity.repository";
import { Grants } from "./grants";
import { generateKeyText, isScope, parseKeyText, SCOPES } from "./keys";
import { issueAuthorityToken, revokeAuthorityToken } from "./authority";

export interface CreatedKey {
  /** Shown once; never stored. */
  key: string;
  record: PublicKeyRecord;
}

export interface PublicKeyRecord {
  id: string;
  organization_id: string;
  livemode: boolean;
  kind: string;
  name: string;
  scopes: string[];
  last4: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  rotated_at: string | null;
  rotation_overlap_ends_at: string | null;
  replaced_by_key_id: string | null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function publicKey(k: KeyRecord): PublicKeyRecord {
  return {
    id: k.id,
    organization_id: k.organization_id,
    livemode: k.livemode,
    kind: k.kind,
    name: k.name,
    scopes: k.scopes,
    last4: k.last4,
    created_at: k.created_at.toISOString(),
    expires_at: iso(k.expires_at),
    revoked_at: iso(k.revoked_at),
    rotated_at: iso(k.rotated_at),
    rotation_overlap_ends_at: iso(k.rotation_overlap_ends_at),
    replaced_by_key_id: k.replaced_by_key_id,
  };
}

/** Plans that let a managing organization hold live keys: paid Pro or Scale, paying (spec, Authentication 10). */
const LIVE_KEY_PLANS = ["pro", "scale"];
const qualifiesForLiveKeys = (o: OrganizationRecord) =>
  LIVE_KEY_PLANS.includes(o.plan_id) && o.subscription_status === "active";

export class Admin {
  private readonly grants: Grants;
  constructor(private readonly repo: IdentityRepository) {
    this.grants = new Grants(repo);
  }

  async createOrganization(name: string, planId = "trial", subscriptionStatus = "trialing", id?: string) {
    this.checkPlan(planId, subscriptionStatus);
    const org = await this.repo.insertOrganization({
      id: id ?? newId("org"),
      name,
      plan_id: planId,
      subscription_status: subscriptionStatus,
    });
    return { ...org, created_at: org.created_at.toISOString() };
  }

  async setPlan(organizationId: string, planId: string, subscriptionStatus: string) {
    this.checkPlan(planId, subscriptionStatus);
    const org = await this.repo.setPlan(organizationId, planId, subscriptionStatus);
    if (!org) throw new ApiError("resource_not_found", `No organization ${organizationId}.`);
    return { ...org, created_at: org.created_at.toISOString() };
  }

  async createKey(o: {
    organizationId: string;
    livemode: boolean;
    kind?: "secret" | "connector";
    scopes?: string[];
    name?: string;
    expiresAt?: Date | null;
  }): Promise<CreatedKey> {
    const org = await this.repo.findOrganization(o.organizationId);
    if (!org) throw new ApiError("resource_not_found", `No organization ${o.organizationId}.`);
    const scopes = o.scopes ?? [...SCOPES];
    const bad = scopes.filter((s) => !isScope(s));
    if (bad.length)
      throw new ApiError("validation_failed", `Unknown scopes: ${bad.join(", ")}.`, { allowed: [...SCOPES] });
    if (o.livemode) await this.checkLiveKeyAllowed(org);
    const key = generateKeyText(o.livemode);
    const parsed = parseKeyText(key)!;
    const record = await this.repo.insertKey({
      id: newId("key"),
      organization_id: o.organizationId,
      livemode: o.livemode,
      kind: o.kind ?? "secret",
      name: o.name ?? `${o.livemode ? "live" : "test"} key`,
      scopes,
      secret_digest: parsed.digest,
      last4: parsed.last4,
      expires_at: o.expiresAt ?? null,
    });
    return { key, record: publicKey(record) };
  }

  /**
   * An organization that manages clients may create a live key only while its
   * own plan, or the plan of at least one client, is a paid Pro or Scale plan
   * (a trial or a plan with a failed payment does not count). Organizations
   * that manage nobody are not restricted here; each request is still checked
   * against the plan of the organization in its path.
   */
  private async checkLiveKeyAllowed(org: OrganizationRecord): Promise<void> {
    const clients = await this.repo.acceptedClients(org.id);
    if (clients.length === 0) return;
    if (qualifiesForLiveKeys(org) || clients.some(qualifiesForLiveKeys)) return;
    throw new ApiError(
      "plan_required",
      "A managing organization may create a live key only while its own plan, or a client's, is a paid Pro or Scale plan.",
      {
        organization_id: org.id,
        plan_id: org.plan_id,
        subscription_status: org.subscription_status,
        required_plans: LIVE_KEY_PLANS,
        clients_checked: clients.length,
      },
    );
  }

  async revokeKey(keyId: string) {
    const k = await this.repo.revokeKey(keyId);
    if (!k) throw new ApiError("resource_not_found", `No key ${keyId}.`);
    return publicKey(k);
  }

  /** Issues a replacement key; the old key keeps working until the overlap window closes. */
  async rotateKey(keyId: string, overlapSeconds: number): Promise<CreatedKey & { rotated: PublicKeyRecord }> {
    const old = await this.repo.findKey(keyId);
    if (!old) throw new ApiError("resource_not_found", `No key ${keyId}.`);
    if (old.revoked_at || old.rotated_at)
      throw new ApiError("wrong_status", `Key ${keyId} is already revoked or rotated.`);
    const fresh = await this.createKey({
      organizationId: old.organization_id,
      livemode: old.livemode,
      kind: old.kind,
      scopes: old.scopes,
      name: old.name,
      expiresAt: old.expires_at,
    });
    const rotated = await this.repo.markRotated(
      old.id,
      fresh.record.id,
      new Date(Date.now() + overlapSeconds * 1000),
    );
    return { ...fresh, rotated: publicKey(rotated!) };
  }

  async linkClient(managerId: string, clientId: string, franceMandate = false) {
    for (const id of [managerId, clientId])
      if (!(await this.repo.findOrganization(id)))
        throw new ApiError("resource_not_found", `No organization ${id}.`);
    const link = await this.repo.upsertLink(managerId, clientId, franceMandate);
    return { ...link, created_at: link.created_at.toISOString() };
  }

  async unlinkClient(managerId: string, clientId: string) {
    const link = await this.repo.endLink(managerId, clientId);
    if (!link) throw new ApiError("resource_not_found", `No link from ${managerId} to ${clientId}.`);
    return link;
  }

  /**
   * Grants with every rule of POST .../grants, as the key's own organization
   * (the manager). This is what the admin CLI's `grant` runs.
   */
  async grantChecked(keyId: string, clientId: string, scopes: string[]) {
    const key = await this.repo.findKey(keyId);
    if (!key)
      throw new ApiError("key_not_grantable", `No key ${keyId}.`, { key_id: keyId, reason: "not_owned" });
    const link = await this.repo.findLink(key.organization_id, clientId);
    if (!link)
      throw new ApiError(
        "organization_not_found_or_not_granted",
        `Organization ${key.organization_id} does not manage ${clientId}.`,
        { organization_id: clientId },
      );
    const role = link.status === "accepted" ? "manager" : "former_manager";
    const out = await this.grants.create(
      { organizationId: key.organization_id, livemode: key.livemode, role, link },
      clientId,
      { key_id: keyId, scopes },
    );
    return out.grant;
  }

  /** Ends one grant, as the key's own organization. */
  async revokeGrant(keyId: string, clientId: string) {
    const key = await this.repo.findKey(keyId);
    if (!key) throw new ApiError("resource_not_found", `No key ${keyId}.`, { key_id: keyId });
    return this.grants.revoke(
      { organizationId: key.organization_id, livemode: key.livemode, role: "manager", link: undefined },
      clientId,
      keyId,
    );
  }

  /** The organization's French affichage delegation (shown by GET .../capabilities). */
  async setAffichageDelegation(organizationId: string, status: string, portalBrandId: string | null) {
    const allowed = ["none", "pending", "active", "revoked"] as const;
    if (!(allowed as readonly string[]).includes(status))
      throw new ApiError("validation_failed", `Unknown delegation status ${status}.`, {
        allowed: [...allowed],
      });
    if (status === "active" && !portalBrandId)
      throw new ApiError(
        "validation_failed",
        "An active delegation names the brand on the affichage portal: give its portal brand id.",
        { status, portal_brand_id: null },
      );
    const org = await this.repo.setAffichageDelegation(
      organizationId,
      status as (typeof allowed)[number],
      portalBrandId,
    );
    if (!org) throw new ApiError("resource_not_found", `No organization ${organizationId}.`);
    return {
      ...org,
      created_at: org.created_at.toISOString(),
      affichage_delegated_at: org.affichage_delegated_at?.toISOString() ?? null,
    };
  }

  /**
   * An authority token for an inspector (docs/decisions/0058): bound to the organization and mode, read only on
   * its authority-tier files, until `expiresAt` (at most 90 days away). Its text is in the answer, once.
   */
  issueAuthorityToken(o: { organizationId: string; livemode: boolean; name: string; expiresAt: Date }) {
    return issueAuthorityToken(this.repo, o);
  }

  /** Revokes an authority token: refused from the next request on. */
  revokeAuthorityToken(id: string) {
    return revokeAuthorityToken(this.repo, id);
  }

  /** Operator override: sets a grant without the API's rules (repair, fixtures). Prefer grantChecked. */
  async grant(keyId: string, clientId: string, scopes: string[]) {
    const g = await this.repo.upsertGrant(keyId, clientId, scopes);
    return { ...g, granted_at: g.granted_at.toISOString() };
  }

  private checkPlan(planId: string, status: string) {
    if (!(PLAN_IDS as readonly string[]).includes(planId))
      throw new ApiError("validation_failed", `Unknown plan ${planId}.`, { allowed: [...PLAN_IDS] });
    if (!(SUBSCRIPTION_STATUSES as readonly string[]).includes(status))
      throw new ApiError("validation_failed", `Unknown subscription status ${status}.`, {
        allowed: [...SUBSCRIPTION_STATUSES],
      });
  }
}
