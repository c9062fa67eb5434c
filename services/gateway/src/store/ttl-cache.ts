/**
 * A small cache of store rows the gateway reads on every request: each entry lives at most `ttlMs` (never more
 * than MAX_CACHE_TTL_MS), at most `maxEntries` are kept (the oldest goes first), and a change announced by the
 * store (see change-listener.ts) evicts the entries it touches at once. Only values that were found are cached,
 * so a row created a moment ago is read at once.
 *
 * A read that was under way while a change was applied is not cached: `getOrLoad` notes the cache's generation
 * before it reads the store and keeps the value only if nothing was evicted meanwhile, so a slow read cannot put
 * back a row that a notification has just dropped.
 */

/** The hard bound on staleness when change notifications are lost. */
export const MAX_CACHE_TTL_MS = 5000;

interface Entry<V> {
  value: V;
  until: number;
}

export class TtlCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  /** Bumped by every eviction: a read that started before an eviction must not be cached. */
  private generation = 0;

  constructor(
    readonly ttlMs: number,
    readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {
    if (!Number.isInteger(ttlMs) || ttlMs < 0 || ttlMs > MAX_CACHE_TTL_MS)
      throw new Error(`cache TTL must be 0 to ${MAX_CACHE_TTL_MS} ms, got ${ttlMs}`);
    if (!Number.isInteger(maxEntries) || maxEntries < 1)
      throw new Error(`cache size must be a positive integer, got ${maxEntries}`);
  }

  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.until <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** The cached value, else `load()`'s, which is cached when defined and no eviction happened during the load. */
  async getOrLoad(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const generation = this.generation;
    const value = await load();
    if (value !== undefined && generation === this.generation) this.put(key, value);
    return value;
  }

  private put(key: string, value: V): void {
    if (this.ttlMs === 0) return;
    // Re-inserting moves the key to the end, so the Map's order stays the order of expiry.
    this.entries.delete(key);
    while (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    this.entries.set(key, { value, until: this.now() + this.ttlMs });
  }

  delete(key: string): void {
    this.generation++;
    this.entries.delete(key);
  }

  deleteWhere(matches: (value: V) => boolean): void {
    this.generation++;
    for (const [key, e] of this.entries) if (matches(e.value)) this.entries.delete(key);
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
