/**
 * A short-lived cache of key records by digest, so a busy key is not looked up
 * on every request. Revocation wins: `revokeKey` and `markRotated` NOTIFY on
 * KEY_CHANGED_CHANNEL and every gateway evicts that key at once; when the
 * notification is lost (listener reconnecting), an entry lives at most
 * KEY_CACHE_TTL_MS (default and maximum 5000 ms). Only found keys are cached,
 * so a key created a moment ago works at once. Expiry and rotation windows are
 * checked against the clock on every request, cached or not.
 */
import type { Logger } from "@dpp/kit";
import { createPool } from "@dpp/kit";
import { KEY_CHANGED_CHANNEL, type KeyRecord } from "./identity.repository";

export const MAX_KEY_CACHE_TTL_MS = 5000;

interface Entry {
  key: KeyRecord;
  until: number;
}

export class KeyCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    readonly ttlMs: number,
    private readonly maxEntries = 10_000,
    private readonly now: () => number = () => Date.now(),
  ) {
    if (ttlMs > MAX_KEY_CACHE_TTL_MS) throw new Error(`key cache TTL above ${MAX_KEY_CACHE_TTL_MS} ms`);
  }

  get(digest: string): KeyRecord | undefined {
    const e = this.entries.get(digest);
    if (!e) return undefined;
    if (e.until <= this.now()) {
      this.entries.delete(digest);
      return undefined;
    }
    return e.key;
  }

  set(digest: string, key: KeyRecord): void {
    if (this.ttlMs <= 0) return;
    if (this.entries.size >= this.maxEntries) {
      // Drop the oldest entry (Map keeps insertion order).
      const first = this.entries.keys().next().value;
      if (first !== undefined) this.entries.delete(first);
    }
    this.entries.set(digest, { key, until: this.now() + this.ttlMs });
  }

  evictKeyId(keyId: string): void {
    for (const [digest, e] of this.entries) if (e.key.id === keyId) this.entries.delete(digest);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * LISTENs on KEY_CHANGED_CHANNEL on a dedicated connection and evicts changed
 * keys. On a lost connection it clears the cache (entries could have missed a
 * notification) and reconnects; the TTL bounds staleness meanwhile.
 */
export function listenForKeyChanges(
  databaseUrl: string,
  schema: string,
  cache: KeyCache,
  log: Logger,
): { stop(): Promise<void> } {
  const pool = createPool({ url: databaseUrl, schema, applicationName: "gateway-key-listener", max: 1, log });
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let release: (() => void) | undefined;

  const connect = async () => {
    if (stopped) return;
    try {
      const client = await pool.connect();
      let done = false;
      const drop = (err?: Error) => {
        if (done) return;
        done = true;
        cache.clear();
        client.release(err ?? true);
        release = undefined;
        if (!stopped) {
          log.warn(
            { err: err ? { message: err.message } : undefined },
            "key change listener lost; reconnecting",
          );
          timer = setTimeout(() => void connect(), 1000);
          timer.unref();
        }
      };
      release = () => drop();
      client.on("notification", (n: { channel: string; payload?: string }) => {
        if (n.channel === KEY_CHANGED_CHANNEL && n.payload) cache.evictKeyId(n.payload);
      });
      client.on("error", (err: Error) => drop(err));
      await client.query(`LISTEN ${KEY_CHANGED_CHANNEL}`);
      // Anything cached before the LISTEN took effect may have missed a notification.
      cache.clear();
    } catch (err) {
      cache.clear();
      if (!stopped) {
        log.warn(
          { err: { message: (err as Error).message } },
          "key change listener could not connect; retrying",
        );
        timer = setTimeout(() => void connect(), 1000);
        timer.unref();
      }
    }
  };
  void connect();
  return {
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      release?.();
      await pool.end();
    },
  };
}
