/**
 * Runs the webhooks service in-process on its own test database, with the events service it reads the feed from
 * (on another test database, trusting it as its caller), and calls it over gRPC with the kit's client, as the
 * gateway does. Events enter the feed through the events service's bus, as producers publish them.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { sql, type Kysely } from "kysely";
import { DOMAIN_EVENTS_TOPIC, createLogger, type ClientOf } from "@dpp/kit";
import { createDb } from "@dpp/kit/internal";
import { PgBus } from "@dpp/bus";
import { domainEvent, newId, type DomainEvent } from "@dpp/contract";
import {
  formatTrustedKeys,
  generateInternalKeyPair,
  startServiceUnderTest,
  type Tenant,
  type UnderTest,
} from "@dpp/kit/testing";
import { webhooksV1 } from "@dpp/proto";
// The feed it delivers is the real events service's, run beside it in the test (never imported by src/).
// eslint-disable-next-line no-restricted-imports
import { eventsService } from "@dpp/events";
import { webhooksService } from "../src/service";
import { WEBHOOKS_SCHEMA, type WebhooksDB } from "../src/store/schema";

export type WebhooksClient = ClientOf<typeof webhooksV1.WebhooksService>;

export interface Harness {
  service: UnderTest<typeof webhooksService>;
  events: UnderTest<typeof eventsService>;
  client: WebhooksClient;
  /** A connection on the service's schema, to look at what a call stored. */
  sql: Kysely<WebhooksDB>;
  /** The tenant's rows in each of the service's tables. */
  rowCounts(t: Tenant): Promise<Record<string, number>>;
  /** Publishes passport.created events of the tenant to the feed; answers them. */
  publish(t: Tenant, n: number): Promise<DomainEvent[]>;
  close(): Promise<void>;
}

export async function startHarness(label: string, env: Record<string, string> = {}): Promise<Harness> {
  const webhooksKeys = generateInternalKeyPair();
  const events = await startServiceUnderTest(
    eventsService,
    { INTERNAL_AUTH_TRUSTED_KEYS: formatTrustedKeys({ webhooks: [webhooksKeys.publicKey] }) },
    `${label}_events`,
  );
  const service = await startServiceUnderTest(
    webhooksService,
    {
      EVENTS_ADDR: events.address,
      // Its outbox relay publishes to the bus the events service consumes.
      BUS_DATABASE_URL: events.database.url,
      INTERNAL_AUTH_PRIVATE_KEY: webhooksKeys.privateKey,
      WEBHOOKS_POLL_INTERVAL_MS: "50",
      WEBHOOKS_IDLE_MS: "50",
      ...env,
    },
    label,
  ).catch(async (err: unknown) => {
    await events.close();
    throw err;
  });
  const query = createDb<WebhooksDB>({
    url: service.database.url,
    schema: WEBHOOKS_SCHEMA,
    applicationName: "webhooks-test",
    max: 2,
  });
  const bus = new PgBus({
    url: events.database.url,
    log: createLogger("webhooks-test", "silent"),
    pollIntervalMs: 50,
  });
  return {
    service,
    events,
    client: service.client(webhooksV1.WebhooksService),
    sql: query,
    rowCounts: async (t) => {
      const counts: Record<string, number> = {};
      for (const table of ["endpoint", "attempt", "idempotency", "outbox"]) {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}
          where organization_id = ${t.organizationId} and livemode = ${t.livemode}`.execute(query);
        counts[table] = rows[0]!.n;
      }
      return counts;
    },
    publish: async (t, n) => {
      const sent = Array.from({ length: n }, () =>
        domainEvent("passport.created", t, {
          object: "passport",
          id: newId("pp"),
          name: "p",
          category: "textile",
          status: "draft",
          previous_status: null,
          version: 1,
        }),
      );
      await bus.publish(
        DOMAIN_EVENTS_TOPIC,
        sent.map((e) => ({ key: e.organization_id, value: JSON.stringify(e) })),
      );
      return sent;
    },
    close: async () => {
      await bus.close?.();
      await query.destroy();
      await service.close();
      await events.close();
    },
  };
}

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A local receiver: answers each request with the next status of `statuses` (then 200), and keeps them. */
export async function startReceiver(statuses: number[] = []): Promise<{
  url: string;
  received: Received[];
  close(): Promise<void>;
}> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      const status = statuses.shift() ?? 200;
      res.writeHead(status, status >= 300 && status < 400 ? { location: "http://169.254.169.254/" } : {});
      res.end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook/${randomBytes(3).toString("hex")}`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
