/**
 * passport.created: written to the outbox in the create's transaction, then moved
 * by the relay to the bus (the Postgres-table transport on the same database).
 */
import { sql } from "kysely";
import { timestampDate } from "@dpp/proto";
import { type DomainEvent } from "@dpp/contract";
import { createLogger, DOMAIN_EVENTS_TOPIC, type BusMessage, type Subscription } from "@dpp/kit";
import { PgBus } from "@dpp/bus";
import { eventually } from "@dpp/kit/testing";
import { context, liveTenant, refusal, startHarness, testTenant, type Harness } from "../harness";

let h: Harness;
let bus: PgBus;
let subscription: Subscription;
const received: BusMessage[] = [];

beforeAll(async () => {
  h = await startHarness("passport_outbox");
  bus = new PgBus({ url: h.db.url, log: createLogger("bus-test", "silent"), pollIntervalMs: 50 });
  subscription = await bus.subscribe({
    group: "test",
    topic: DOMAIN_EVENTS_TOPIC,
    handler: async (messages) => {
      received.push(...messages);
    },
  });
});
afterAll(async () => {
  await subscription?.stop();
  await bus?.close();
  await h?.close();
});

interface OutboxRow {
  event_id: string;
  organization_id: string;
  livemode: boolean;
  type: string;
  payload: DomainEvent;
  sent_at: Date | null;
}

async function outboxOf(organizationId: string): Promise<OutboxRow[]> {
  const { rows } = await sql<OutboxRow>`select event_id, organization_id, livemode, type, payload, sent_at
    from outbox where organization_id = ${organizationId} order by id`.execute(h.sql);
  return rows;
}

const eventsOnBus = (organizationId: string) =>
  received.filter((m) => m.key === organizationId).map((m) => JSON.parse(m.value) as DomainEvent);

describe("passport.created", () => {
  it("is in the outbox as soon as the create returns, with the passport's related shape", async () => {
    const t = testTenant();
    const p = await h.create(t, { category: "textile", data: { product_name: "Evented" } });
    const rows = await outboxOf(t.organizationId);
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row).toMatchObject({
      organization_id: t.organizationId,
      livemode: false,
      type: "passport.created",
    });
    expect(row.event_id).toMatch(/^evt_/);
    expect(row.payload).toEqual({
      id: row.event_id,
      type: "passport.created",
      organization_id: t.organizationId,
      livemode: false,
      created_at: timestampDate(p.createdAt!).toISOString(),
      related: {
        object: "passport",
        id: p.id,
        name: `organizations/${t.organizationId}/passports/${p.id}`,
        category: "textile",
        status: "draft",
        previous_status: null,
        version: 1,
      },
    });
  });

  it("is relayed to the bus keyed by the organization, and the row is marked sent", async () => {
    const t = liveTenant();
    const p = await h.create(t, { category: "battery" });
    const [event] = await eventually(async () => {
      const got = eventsOnBus(t.organizationId);
      return got.length > 0 ? got : undefined;
    });
    const [row] = await outboxOf(t.organizationId);
    expect(event).toEqual(row!.payload);
    expect(event).toMatchObject({
      type: "passport.created",
      livemode: true,
      related: { id: p.id, category: "battery" },
    });
    const sent = await eventually(async () => {
      const [r] = await outboxOf(t.organizationId);
      return r?.sent_at ?? undefined;
    });
    expect(sent).toBeInstanceOf(Date);
  });

  it("relays one event per passport, in creation order for one organization", async () => {
    const t = testTenant();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await h.create(t, { category: "general", external_id: `E-${i}` })).id);
    const events = await eventually(async () => {
      const got = eventsOnBus(t.organizationId);
      return got.length >= 5 ? got : undefined;
    });
    expect(events.map((e) => (e.related as { id: string }).id)).toEqual(ids);
    expect(new Set(events.map((e) => e.id)).size).toBe(5);
  });

  it("is not written for a refused create", async () => {
    const t = testTenant();
    const once = await h.create(t, { category: "textile", external_id: "ONCE" });
    await refusal(h.create(t, { category: "textile", external_id: "ONCE" }));
    await refusal(h.create(t, { category: "textile", data: { unknown_key: 1 } }));
    expect(await outboxOf(t.organizationId)).toHaveLength(1);
    // A later passport of the same organization arrives after everything before it (same key, same order).
    const marker = await h.create(t, { category: "textile" });
    const events = await eventually(async () => {
      const got = eventsOnBus(t.organizationId);
      return got.some((e) => (e.related as { id: string }).id === marker.id) ? got : undefined;
    });
    expect(events.map((e) => (e.related as { id: string }).id)).toEqual([once.id, marker.id]);
  });
});

describe("an event of a write by id", () => {
  it("describes the row the write left: its version, its status before, the time of its updated_at", async () => {
    const t = testTenant();
    const p = await h.create(t, { category: "textile", data: { product_name: "Before" } });
    const { passport: updated } = await h.client.updatePassport(
      { id: p.id, patchJson: JSON.stringify({ data: { product_name: "After" } }) },
      { context: context(t) },
    );
    const { passport: trashed } = await h.client.trashPassport({ id: p.id }, { context: context(t) });
    const rows = await outboxOf(t.organizationId);
    expect(rows.map((r) => r.payload)).toEqual([
      expect.objectContaining({ type: "passport.created" }),
      {
        id: rows[1]!.event_id,
        type: "passport.updated",
        organization_id: t.organizationId,
        livemode: false,
        created_at: timestampDate(updated!.updatedAt!).toISOString(),
        related: {
          object: "passport",
          id: p.id,
          name: `organizations/${t.organizationId}/passports/${p.id}`,
          category: "textile",
          status: "draft",
          previous_status: "draft",
          version: 2,
        },
      },
      expect.objectContaining({
        type: "passport.trashed",
        created_at: timestampDate(trashed!.updatedAt!).toISOString(),
        related: expect.objectContaining({ status: "trashed", previous_status: "draft", version: 3 }),
      }),
    ]);
  });

  it("is not written when the write is refused for a moved version", async () => {
    const t = testTenant();
    const p = await h.create(t, { category: "textile" });
    await refusal(h.client.trashPassport({ id: p.id, expectedVersion: 7 }, { context: context(t) }));
    expect((await outboxOf(t.organizationId)).map((r) => r.type)).toEqual(["passport.created"]);
  });
});
