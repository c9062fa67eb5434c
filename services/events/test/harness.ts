/** Runs the events service in-process against its own test database. */
import { randomBytes } from "node:crypto";
import { newId, type DomainEvent } from "@dpp/contract";
import { DOMAIN_EVENTS_TOPIC, PgBus, createLogger, type ClientOf, type RequestContext } from "@dpp/kit";
import { eventually, startServiceUnderTest, type TestDatabase, type UnderTest } from "@dpp/kit/testing";
import { eventsV1 } from "@dpp/proto";
import { eventsService } from "../src/service";

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
    req?: { limit?: string; cursor?: string; types?: string[] },
  ): Promise<eventsV1.ListEventsResponse>;
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
  const list: Harness["list"] = (tenant, req = {}) =>
    client.listEvents({ limit: "", cursor: "", types: [], ...req }, { context: context(tenant) });
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
    waitForFeed: (tenant, n) =>
      eventually(async () => {
        const page = await list(tenant, { limit: "100" });
        return page.events.length >= n ? page.events : undefined;
      }),
    close: async () => {
      await bus.close();
      await service.close();
    },
  };
}
