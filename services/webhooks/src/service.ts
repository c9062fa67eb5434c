/**
 * The webhooks service on the kit's service template: the endpoints (rpc) and, on every replica, a delivery
 * worker that pushes each endpoint's share of its organization's feed (delivery/worker.ts).
 */
import { sql } from "kysely";
import { defineService, type ServiceRuntime } from "@dpp/kit";
import { eventsV1, webhooksV1 } from "@dpp/proto";
import { migrations } from "../migrations";
import { webhooksEnv } from "./config";
import { systemResolve, type HttpOptions, type Resolve } from "./delivery/http";
import { DeliveryWorker } from "./delivery/worker";
import { webhooksRpc } from "./rpc/webhooks.rpc";
import { WebhooksStore } from "./store/store";
import { WEBHOOKS_SCHEMA, type WebhooksDB } from "./store/schema";

/** Replaced by tests: the resolver deliveries and creations use. */
export const resolverOverride: { resolve?: Resolve } = {};

export const webhooksService = defineService({
  name: "webhooks",
  schema: WEBHOOKS_SCHEMA,
  migrations,
  env: webhooksEnv,
  grpcPort: 50057,
  outbox: true,
  idempotency: true,
  start: (rt: ServiceRuntime<typeof webhooksEnv, WebhooksDB>) => {
    const c = rt.config;
    const store = new WebhooksStore(rt.db);
    const events = rt.client(eventsV1.EventsService, { address: c.EVENTS_ADDR, audience: "events" });
    const http: HttpOptions = {
      connectTimeoutMs: c.WEBHOOKS_CONNECT_TIMEOUT_MS,
      timeoutMs: c.WEBHOOKS_TIMEOUT_MS,
      maxResponseBytes: c.WEBHOOKS_MAX_RESPONSE_BYTES,
      resolve: (host) => (resolverOverride.resolve ?? systemResolve)(host),
    };
    const worker = new DeliveryWorker(
      store,
      events,
      {
        leaseMs: c.WEBHOOKS_LEASE_MS,
        concurrency: c.WEBHOOKS_CONCURRENCY,
        batch: c.WEBHOOKS_BATCH,
        idleMs: c.WEBHOOKS_IDLE_MS,
        retry: {
          baseMs: c.WEBHOOKS_RETRY_BASE_MS,
          maxMs: c.WEBHOOKS_RETRY_MAX_MS,
          disableAfterMs: c.WEBHOOKS_DISABLE_AFTER_MS,
        },
        http,
      },
      rt.log,
      rt.eventsCommitted,
    );
    // Every replica delivers (no leadership): the endpoints are shared out by their leases.
    const delivery = rt.job({
      name: "webhooks:deliver",
      intervalMs: c.WEBHOOKS_POLL_INTERVAL_MS,
      lock: false,
      run: () => worker.pass(),
    });
    // Stopped first on SIGTERM (the kit's drain, with the delivery job): no endpoint's work is claimed anew.
    rt.onDrain(() => worker.stop());
    // How far the endpoints this replica delivered to lately are behind their feeds (delivery/worker.ts).
    rt.metrics.onScrape(
      "dpp_consumer_lag",
      "Events a consumer has not consumed yet (behind the head of what it reads)",
      ["consumer"],
      () => [{ labels: { consumer: "webhooks-delivery" }, value: worker.lag() }],
    );
    // Endpoints whose deliveries fail and are retried: how many, and since when the oldest has failed.
    rt.metrics.queue("webhook_retries", async () => {
      const { rows } = await sql<{ backlog: number; age: number | null }>`
        select count(*)::int as backlog, extract(epoch from now() - min(failing_since))::float8 as age
        from endpoint where enabled and failing_since is not null`.execute(rt.db);
      return { backlog: rows[0]?.backlog ?? 0, oldestAgeSeconds: rows[0]?.age ?? 0 };
    });
    rt.job({
      name: "webhooks:attempt-retention",
      intervalMs: 3_600_000,
      run: () => store.expireAttempts(c.WEBHOOKS_ATTEMPT_RETENTION_DAYS),
      report: "old webhook attempts deleted",
    });
    rt.serve(
      webhooksV1.WebhooksService,
      webhooksRpc({ store, events, http, onCommitted: rt.eventsCommitted }),
    );
    return { store, worker, delivery };
  },
});
