/**
 * The delivery workers: every replica runs one (a job without leadership), and the endpoints are shared out by
 * leases in Postgres (store.lease: FOR UPDATE SKIP LOCKED, a lease that ends on its own if its worker dies).
 * Each leased endpoint is delivered on its own, concurrently with the others: it reads the organization's feed
 * (events' ReadFeed) after the sequence it has delivered up to and sends the events one at a time, in feed order,
 * moving its position past the events the receiver accepted (one statement per group of up to `flushEvery`
 * accepted events or `flushMs`, whichever comes first, and always before a failure is recorded or the run ends).
 * The run's deliveries share one kept connection (http.ts, runAgent). A failure stops the endpoint's run and
 * schedules its retry (backoff with jitter); 410 Gone, or failing for too long, disables it with an event. So an
 * endpoint that is slow or down delays only itself: the next pass leases the other endpoints while its run goes on.
 *
 * An event is delivered at least once: a worker killed after the receiver accepted events and before its
 * position moved past them delivers them again, in order and with the same webhook-ids (the events' ids), after
 * its lease ended.
 */
import { randomBytes } from "node:crypto";
import type { ClientOf, Logger } from "@dpp/kit";
import type { eventsV1 } from "@dpp/proto";
import { afterFailure, type RetryPolicy } from "../domain/retry";
import { deliveryBody, signatureHeader } from "../domain/signature";
import type { EndpointRow, NewAttempt, WebhooksStore } from "../store/store";
import type { Agent } from "node:http";
import { runAgent, send, type HttpOptions, type SendResult } from "./http";

export type EventsClient = ClientOf<typeof eventsV1.EventsService>;

export interface WorkerOptions {
  leaseMs: number;
  /** Endpoints one worker delivers at the same time. */
  concurrency: number;
  /** Events read from the feed per run of an endpoint. */
  batch: number;
  /** An endpoint whose run found nothing to deliver is looked at again after this long (one that delivered
   * something is leased again on the next pass). */
  idleMs: number;
  /** Accepted events whose position is moved in one statement, at most ... */
  flushEvery?: number;
  /** ... and at most this long after the first of them was accepted. */
  flushMs?: number;
  retry: RetryPolicy;
  http: HttpOptions;
}

/** The secrets that sign now: the current one, and the previous one during a rotation's overlap. */
export function signingSecrets(e: EndpointRow, now = new Date()): string[] {
  return e.previous_secret && e.previous_secret_expires_at && e.previous_secret_expires_at > now
    ? [e.secret, e.previous_secret]
    : [e.secret];
}

/** Sends one message to the endpoint, signed with its secrets. */
export function deliver(
  e: EndpointRow,
  webhookId: string,
  body: string,
  http: HttpOptions,
  agent?: Agent,
): Promise<SendResult> {
  const timestamp = Math.floor(Date.now() / 1000);
  return send(
    new URL(e.url),
    e.livemode,
    {
      "webhook-id": webhookId,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signatureHeader(signingSecrets(e), webhookId, timestamp, body),
    },
    body,
    http,
    agent,
  );
}

export const tenantContext = (e: { organization_id: string; livemode: boolean }) => ({
  requestId: `whk_${randomBytes(6).toString("hex")}`,
  organizationId: e.organization_id,
  livemode: e.livemode,
});

/** How long an endpoint's lag after a run here counts in lag(). */
export const LAG_WINDOW_MS = 60_000;

/** What a run learned of its endpoint's feed: its head, the position delivered, whether it caught up. */
interface RunProgress {
  head: number | undefined;
  reached: number;
  caughtUp: boolean;
}

export class DeliveryWorker {
  readonly owner = `w_${randomBytes(8).toString("hex")}`;
  private readonly running = new Set<Promise<void>>();
  private stopping = false;

  constructor(
    private readonly store: WebhooksStore,
    private readonly events: EventsClient,
    private readonly o: WorkerOptions,
    private readonly log: Logger,
    private readonly onCommitted: () => void,
  ) {}

  /** Each endpoint's lag after its last run here (lag()). */
  private readonly lags = new Map<string, { lag: number; at: number }>();

  /** One pass: leases what this worker has room for and starts each endpoint's run; never waits for them. */
  async pass(): Promise<number> {
    if (this.stopping) return 0;
    const leased = await this.store.lease(this.owner, this.o.leaseMs, this.o.concurrency - this.running.size);
    for (const e of leased) {
      const run: Promise<void> = this.run(e)
        .catch((err: unknown) => {
          this.log.warn({ err, endpoint: e.id }, "webhook delivery run failed");
          return this.store.release(this.owner, e, this.o.idleMs).catch(() => undefined);
        })
        .finally(() => this.running.delete(run));
      this.running.add(run);
    }
    return leased.length;
  }

  /**
   * Events behind the head of their feeds, summed over the endpoints this worker ran in the last LAG_WINDOW_MS
   * (the metric dpp_consumer_lag{consumer="webhooks-delivery"}): after each run, 0 when it delivered every matching
   * event up to the feed's head, else the head's sequence less the position it reached. An endpoint another
   * replica runs now drops out after the window; across replicas, the largest value is the one to read.
   */
  lag(now = Date.now()): number {
    let sum = 0;
    for (const [id, l] of this.lags) {
      if (now - l.at > LAG_WINDOW_MS) this.lags.delete(id);
      else sum += l.lag;
    }
    return sum;
  }

  /** Stops leasing and waits for the runs under way. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.running]);
  }

  private async run(e: EndpointRow): Promise<void> {
    const agent = runAgent(new URL(e.url));
    const progress: RunProgress = { head: undefined, reached: Number(e.delivered_sequence), caughtUp: false };
    try {
      await this.deliverRun(e, agent, progress);
    } finally {
      agent.destroy();
      if (progress.head !== undefined)
        this.lags.set(e.id, {
          lag: progress.caughtUp ? 0 : Math.max(0, progress.head - progress.reached),
          at: Date.now(),
        });
    }
  }

  private async deliverRun(e: EndpointRow, agent: Agent, progress: RunProgress): Promise<void> {
    const started = Date.now();
    const flushEvery = this.o.flushEvery ?? 50;
    const flushMs = this.o.flushMs ?? 50;
    const feed = await this.events.readFeed(
      { afterSequence: BigInt(e.delivered_sequence), types: e.types, limit: this.o.batch },
      { context: tenantContext(e) },
    );
    progress.head = Number(feed.headSequence);
    // Accepted events whose position is not moved yet, and when the first of them was accepted.
    let accepted: NewAttempt[] = [];
    let firstAt = 0;
    let lastAccepted = 0;
    // An event accepted in this run ended the endpoint's failing streak (store.delivered resets it).
    let streakEnded = false;
    const flush = async (): Promise<boolean> => {
      if (accepted.length === 0) return true;
      const held = await this.store.delivered(this.owner, e, lastAccepted, accepted);
      accepted = [];
      if (held) progress.reached = lastAccepted;
      return held;
    };
    for (const entry of feed.entries) {
      // The lease must outlast the run: stop halfway through it and take the endpoint again.
      if (this.stopping || Date.now() - started > this.o.leaseMs / 2) {
        if (await flush()) await this.store.release(this.owner, e, 0);
        return;
      }
      const event = JSON.parse(entry.eventJson) as { id: string; type: string };
      const sequence = Number(entry.sequence);
      const res = await deliver(e, event.id, deliveryBody(entry.eventJson, entry.cursor), this.o.http, agent);
      const attempt: NewAttempt = {
        endpoint_id: e.id,
        organization_id: e.organization_id,
        livemode: e.livemode,
        webhook_id: event.id,
        event_id: event.id,
        event_type: event.type,
        sequence,
        next_cursor: entry.cursor,
        kind: "delivery",
        status: res.ok ? "succeeded" : "failed",
        response_status: res.status ?? null,
        error: res.error ?? null,
        latency_ms: res.latencyMs,
        next_retry_at: null,
      };
      if (res.ok) {
        if (accepted.length === 0) firstAt = Date.now();
        accepted.push(attempt);
        lastAccepted = sequence;
        streakEnded = true;
        if (accepted.length >= flushEvery || Date.now() - firstAt >= flushMs) if (!(await flush())) return;
        continue;
      }
      if (!(await flush())) return;
      const outcome = afterFailure(this.o.retry, {
        status: res.status,
        failingSince: streakEnded ? null : e.failing_since,
        failures: streakEnded ? 1 : e.failed_attempts + 1,
        now: new Date(),
      });
      if ("retryAt" in outcome) attempt.next_retry_at = outcome.retryAt;
      const disabled = await this.store.failed(this.owner, e, attempt, outcome);
      if (disabled) {
        this.onCommitted();
        this.log.info({ endpoint: e.id, reason: disabled.disabled_reason }, "webhook endpoint disabled");
      }
      return;
    }
    if (!(await flush())) return;
    // Every matching event up to the head was delivered.
    progress.caughtUp = !feed.hasMore;
    // An endpoint that had events is looked at again on the next pass: its feed is busy, and what came while this
    // run delivered should not wait the idle interval too. One that had none waits it (an idle endpoint is cheap).
    await this.store.release(this.owner, e, feed.entries.length > 0 ? 0 : this.o.idleMs);
  }
}
