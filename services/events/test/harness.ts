/** Runs the events service in-process against its own test database. */
import { randomBytes } from "node:crypto";
import { newId, type DomainEvent } from "@dpp/contract";
import { DOMAIN_EVENTS_TOPIC, createLogger, type ClientOf, type RequestContext } from "@dpp/kit";
import { createDb } from "@dpp/kit/internal";
import { PgBus } from "@dpp/bus";
import { eventually, startServiceUnderTest, type TestDatabase, type UnderTest } from "@dpp/kit/testing";
import { eventsV1 } from "@dpp/proto";
import { eventsService } from "../src/service";
import { EVENTS_SCHEMA, type EventsDB } from "../src/store/schema";

export interface Tenant {
  organizationId: string;
  livemode: boolean;
}

export const newOrg = () => `org_${randomBytes(6).toString("hex")}`;

export function domainEvent(
  tenant: Tenant,
  type = "passport.created",
  related: Record<string, unknown> = {},
): DomainEvent {
  const id = newId("evt");
  return {
    id,
    type,
    organization_id: tenant.organizationId,
    livemode: tenant.livemode,
    created_at: new Date().toISOString(),
    related: { object: "passport", id: newId("pp"), ...related },
  };
}

export type EventsClient = ClientOf<typeof eventsV1.EventsService>;

type EventsUnderTest = UnderTest<typeof eventsService>;

export interface Harness {
  db: TestDatabase;
  service: EventsUnderTest;
  client: EventsClient;
  publish(...events: DomainEvent[]): Promise<void>;
  publishRaw(key: string, ...values: string[]): Promise<void>;
  list(
    tenant: Tenant,
    req?: { limit?: number; cursor?: string; types?: string[]; asJson?: boolean; asPage?: boolean },
  ): Promise<eventsV1.ListEventsResponse>;
  /** The feed positions of served events, read from the store (the messages do not carry them), in order. */
  sequences(events: eventsV1.Event[]): Promise<number[]>;
  /** Waits until the tenant's feed (all types) holds at least n events, and returns them. */
  waitForFeed(tenant: Tenant, n: number): Promise<eventsV1.Event[]>;
  close(): Promise<void>;
}

export async function startHarness(label: string): Promise<Harness> {
  const log = createLogger("events-test", "silent");
  const service = await startServiceUnderTest(
    eventsService,
    { FEED_RETENTION_INTERVAL_MS: "3600000" },
    label,
  );
  const db = service.database;
  const bus = new PgBus({ url: db.url, log, pollIntervalMs: 50 });
  const client = service.client(eventsV1.EventsService);
  const context = (t: Tenant): RequestContext => ({
    requestId: `req_${randomBytes(4).toString("hex")}`,
    organizationId: t.organizationId,
    livemode: t.livemode,
  });
  const list: Harness["list"] = (tenant, req = {}) => client.listEvents(req, { context: context(tenant) });
  const store = createDb<EventsDB>({
    url: db.url,
    schema: EVENTS_SCHEMA,
    applicationName: "events-test-harness",
    max: 1,
  });
  return {
    db,
    service,
    client,
    publish: (...events) =>
      bus.publish(
        DOMAIN_EVENTS_TOPIC,
        events.map((e) => ({ key: e.organization_id, value: JSON.stringify(e) })),
      ),
    publishRaw: (key, ...values) =>
      bus.publish(
        DOMAIN_EVENTS_TOPIC,
        values.map((value) => ({ key, value })),
      ),
    list,
    sequences: async (events) => {
      if (events.length === 0) return [];
      const { organizationId, livemode } = events[0]!;
      const rows = await store
        .selectFrom("event")
        .select(["event_id", "sequence"])
        .where("organization_id", "=", organizationId)
        .where("livemode", "=", livemode)
        .where(
          "event_id",
          "in",
          events.map((e) => e.id),
        )
        .execute();
      const byId = new Map(rows.map((r) => [r.event_id, r.sequence]));
      return events.map((e) => {
        const sequence = byId.get(e.id);
        if (sequence === undefined || e.organizationId !== organizationId || e.livemode !== livemode)
          throw new Error(`event ${e.id} is not in the feed of ${organizationId}`);
        return sequence;
      });
    },
    waitForFeed: (tenant, n) =>
      eventually(async () => {
        const page = await list(tenant, { limit: 100 });
        return page.events.length >= n ? page.events : undefined;
      }),
    close: async () => {
      await store.destroy();
      await bus.close();
      await service.close();
    },
  };
}
