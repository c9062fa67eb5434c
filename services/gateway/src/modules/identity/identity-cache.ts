/**
 * What the gateway reads on every request, cached (docs/decisions/0021): key records by digest, organizations
 * with their plan, and the scopes a key holds on a client organization through a grant. A GET of a passport
 * then costs the gateway no Postgres round trip in the steady state.
 *
 * Bounds: an entry lives at most its TTL (KEY_CACHE_TTL_MS, ORGANIZATION_CACHE_TTL_MS, GRANT_CACHE_TTL_MS;
 * default and maximum 5000 ms) and each cache keeps at most MAX_ENTRIES. Every change to the rows behind them
 * (an update or delete of an organization or a key, any change of a grant or a managing link) is announced by
 * a trigger of the gateway's schema on IDENTITY_CHANGED_CHANNEL, in the changing transaction, and every gateway
 * evicts the entries it touches at once; the gateway's own changes also evict in process before it answers.
 * When notifications are lost (listener reconnecting) the cache is cleared and the TTL bounds staleness.
 * Revocation wins: a revoked key, an ended grant or link stops working at once. Only rows that were found are
 * cached, so a newly created organization, key or grant works at once; the one remembered absence is a key text
 * no key has (`unknownKeys`), which any change of a key forgets. Expiry and rotation windows are compared
 * with the clock on every request, cached or not.
 */
import type { Logger, PlanContext } from "@dpp/kit";
import { TtlCache } from "../../store/ttl-cache";
import { listenForChanges, type ChangeListener } from "../../store/change-listener";
import {
  IDENTITY_CHANGED_CHANNEL,
  type IdentityChange,
  type KeyRecord,
  type OrganizationRecord,
} from "./identity.repository";

/** Entries per cache: the bound on memory (an entry is a few hundred bytes). */
export const MAX_ENTRIES = 10_000;

/** An organization as requests need it: the row and the plan entitlements carried to the services. */
export interface CachedOrganization {
  record: OrganizationRecord;
  plan: PlanContext;
}

/** The scopes a key holds on a client organization through an active grant. */
export interface CachedGrant {
  clientId: string;
  scopes: string[];
}

export interface IdentityCacheOptions {
  keyTtlMs: number;
  organizationTtlMs: number;
  grantTtlMs: number;
  maxEntries?: number;
  now?: () => number;
}

export class IdentityCache {
  /** Key records by secret digest. */
  readonly keys: TtlCache<KeyRecord>;
  /**
   * Digests no key has: a key text sent again within the key TTL is refused without a lookup. Any change of a key
   * (one created included) empties it, so it never hides a key; the text of a new key is random anyway, so no
   * request can have sent it before it existed.
   */
  readonly unknownKeys: TtlCache<true>;
  /** Organizations by id. */
  readonly organizations: TtlCache<CachedOrganization>;
  /** Grants by key id and client organization id (see grantKey). */
  readonly grants: TtlCache<CachedGrant>;

  constructor(o: IdentityCacheOptions) {
    const max = o.maxEntries ?? MAX_ENTRIES;
    this.keys = new TtlCache(o.keyTtlMs, max, o.now);
    this.unknownKeys = new TtlCache(o.keyTtlMs, max, o.now);
    this.organizations = new TtlCache(o.organizationTtlMs, max, o.now);
    this.grants = new TtlCache(o.grantTtlMs, max, o.now);
  }

  /** Whether anything is cached at all (every TTL 0: nothing is, and nothing needs to listen). */
  get enabled(): boolean {
    return this.keys.ttlMs > 0 || this.organizations.ttlMs > 0 || this.grants.ttlMs > 0;
  }

  /** Evicts what a change touches: a key, an organization, or every grant on a client organization. */
  apply(change: IdentityChange | string): void {
    const at = change.indexOf(":");
    const kind = change.slice(0, at);
    const id = change.slice(at + 1);
    if (at < 0 || id === "") return;
    if (kind === "key") {
      this.keys.deleteWhere((k) => k.id === id);
      this.unknownKeys.clear();
    } else if (kind === "organization") this.organizations.delete(id);
    else if (kind === "access") this.grants.deleteWhere((g) => g.clientId === id);
  }

  /**
   * The key record of a digest: cached, known to be unknown (undefined, no lookup), or read by `load`. A digest
   * `load` does not find is remembered as unknown, unless a key changed while it read.
   */
  async keyByDigest(
    digest: string,
    load: () => Promise<KeyRecord | undefined>,
  ): Promise<KeyRecord | undefined> {
    let found: KeyRecord | undefined;
    await this.unknownKeys.getOrLoad(digest, async () => {
      found = await this.keys.getOrLoad(digest, load);
      return found ? undefined : true;
    });
    return found;
  }

  clear(): void {
    this.keys.clear();
    this.unknownKeys.clear();
    this.organizations.clear();
    this.grants.clear();
  }
}

/** The grants cache's key: key ids never contain NUL, so the pair is unambiguous. */
export const grantKey = (keyId: string, clientId: string) => `${keyId}\u0000${clientId}`;

/** Applies the store's change notifications to the cache; on a lost connection it clears it and reconnects. */
export function listenForIdentityChanges(
  databaseUrl: string,
  schema: string,
  cache: IdentityCache,
  log: Logger,
): ChangeListener {
  return listenForChanges({
    databaseUrl,
    schema,
    channel: IDENTITY_CHANGED_CHANNEL,
    applicationName: "gateway-identity-listener",
    log,
    onChange: (payload) => cache.apply(payload),
    onReset: () => cache.clear(),
  });
}
