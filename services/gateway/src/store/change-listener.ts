/**
 * LISTENs on one channel on a dedicated connection and hands each notification to `onChange`. Whenever the
 * connection is (re)established or lost, `onReset` runs: anything cached meanwhile may have missed a
 * notification. A lost connection is retried every second until `stop`.
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "@dpp/kit";
import { createPool } from "@dpp/kit/internal";

/** What caughtUp needs of the listening connection. */
interface Connection {
  query(text: string, values: unknown[]): Promise<unknown>;
}

export interface ChangeListener {
  /**
   * Resolves once every change committed before the call has been handed to `onChange` (Postgres delivers
   * notifications in commit order, so a notification sent now arrives after them). Waits for the connection.
   */
  caughtUp(): Promise<void>;
  stop(): Promise<void>;
}

/** Payloads of the listener's own `caughtUp` notifications; never handed to `onChange`. */
const SYNC_PREFIX = "sync:";
const RETRY_MS = 1000;

export function listenForChanges(o: {
  databaseUrl: string;
  schema: string;
  channel: string;
  applicationName: string;
  log: Logger;
  onChange(payload: string): void;
  onReset(): void;
}): ChangeListener {
  const { channel, log } = o;
  const pool = createPool({
    url: o.databaseUrl,
    schema: o.schema,
    applicationName: o.applicationName,
    max: 1,
    log,
  });
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let release: (() => void) | undefined;
  let client: Connection | undefined;
  const syncs = new Map<string, () => void>();
  /** Callers of caughtUp waiting for a connection. */
  let waiting: Array<() => void> = [];

  const retry = () => {
    if (stopped) return;
    timer = setTimeout(() => void connect(), RETRY_MS);
    timer.unref();
  };

  const connect = async () => {
    if (stopped) return;
    try {
      const c = await pool.connect();
      let done = false;
      const drop = (err?: Error) => {
        if (done) return;
        done = true;
        client = undefined;
        release = undefined;
        o.onReset();
        // The reset dropped everything cached: whoever waits for earlier changes is caught up.
        for (const done of syncs.values()) done();
        syncs.clear();
        c.release(err ?? true);
        if (!stopped) {
          log.warn(
            { err: err ? { message: err.message } : undefined },
            `${channel} listener lost; reconnecting`,
          );
          retry();
        }
      };
      release = () => drop();
      c.on("notification", (n: { channel: string; payload?: string }) => {
        if (n.channel !== channel || !n.payload) return;
        if (n.payload.startsWith(SYNC_PREFIX)) {
          const nonce = n.payload.slice(SYNC_PREFIX.length);
          syncs.get(nonce)?.();
          syncs.delete(nonce);
        } else o.onChange(n.payload);
      });
      c.on("error", (err: Error) => drop(err));
      await c.query(`LISTEN ${channel}`);
      // Anything cached before the LISTEN took effect may have missed a notification.
      o.onReset();
      client = c;
      const woken = waiting;
      waiting = [];
      for (const wake of woken) wake();
    } catch (err) {
      o.onReset();
      if (!stopped) {
        log.warn(
          { err: { message: (err as Error).message } },
          `${channel} listener could not connect; retrying`,
        );
        retry();
      }
    }
  };
  void connect();

  return {
    caughtUp: async () => {
      for (;;) {
        if (stopped) throw new Error(`the ${channel} listener is stopped`);
        if (!client) await new Promise<void>((resolve) => waiting.push(resolve));
        const c = client;
        if (!c) continue;
        const nonce = randomBytes(8).toString("hex");
        const seen = new Promise<void>((resolve) => syncs.set(nonce, resolve));
        try {
          await c.query("select pg_notify($1, $2)", [channel, SYNC_PREFIX + nonce]);
        } catch {
          syncs.delete(nonce);
          continue; // the connection was lost: wait for the next one
        }
        return seen;
      }
    },
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      release?.();
      for (const wake of waiting) wake();
      await pool.end();
    },
  };
}
