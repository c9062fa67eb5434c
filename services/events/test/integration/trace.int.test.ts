/**
 * One trace from the request to the feed: the span of the gateway's request
 * (and, under it, the owning service's span, whose transaction writes the
 * event to its outbox) is the ancestor of the relay's publish span and of the
 * events consumer's span, through the trace context stored in the outbox row
 * and carried in the message headers (W3C traceparent).
 *
 * In a process, OpenTelemetry's HTTP and gRPC instrumentations make the first
 * two spans and carry the context from the gateway to the service in gRPC
 * metadata; jest's module loader bypasses their patching, so this test opens
 * those two spans itself, with the kinds and names the instrumentations give
 * them. Everything after them is the code that runs in production: writeOutbox,
 * the outbox relay, the Postgres-table bus and the events service's own feed
 * consumer, running in-process with its real database.
 */
import { randomBytes } from "node:crypto";
import { SpanKind, trace, type Span } from "@opentelemetry/api";
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { DOMAIN_EVENTS_TOPIC, createLogger, createOutboxTable, writeOutbox, type WithOutbox } from "@dpp/kit";
import { OutboxRelay, createDb, migrateSchema } from "@dpp/kit/internal";
import { PgBus } from "@dpp/bus";
import { domainEvent, newOrg, startHarness, type Harness } from "../harness";

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
let h: Harness;

beforeAll(async () => {
  // Global tracer provider, AsyncLocalStorage context manager and the W3C propagator, as the SDK sets them.
  provider.register();
  h = await startHarness("trace");
});

afterAll(async () => {
  await h?.close();
  await provider.shutdown();
  trace.disable();
});

const spanId = (s: ReadableSpan | Span) => ("spanContext" in s ? s.spanContext().spanId : undefined);

it("carries the gateway's trace through the outbox, the relay and the bus to the events consumer's span", async () => {
  const log = createLogger("events-trace-test", "silent");
  const schema = `tr_${randomBytes(3).toString("hex")}`;
  const db = createDb<WithOutbox>({ url: h.db.url, schema, applicationName: "events-trace-test", max: 2 });
  const bus = new PgBus({ url: h.db.url, log, pollIntervalMs: 50 });
  try {
    await migrateSchema(db, schema, { "0001_outbox": { up: (d) => createOutboxTable(d) } });
    const tenant = { organizationId: newOrg(), livemode: false };
    const event = domainEvent(tenant);
    const tracer = trace.getTracer("test");

    let gateway!: Span;
    let service!: Span;
    await tracer.startActiveSpan(
      "POST /v1/organizations/:organization/passports",
      { kind: SpanKind.SERVER },
      async (g) => {
        gateway = g;
        await tracer.startActiveSpan(
          "dpp.passport.v1.PassportService/CreatePassport",
          { kind: SpanKind.SERVER },
          async (s) => {
            service = s;
            await db.transaction().execute((trx) => writeOutbox(trx, event));
            s.end();
          },
        );
        g.end();
      },
    );
    const traceId = gateway.spanContext().traceId;

    // The row holds the writing span's context.
    const row = await db.selectFrom("outbox").select("trace_context").executeTakeFirstOrThrow();
    const stored = (
      typeof row.trace_context === "string" ? JSON.parse(row.trace_context) : row.trace_context
    ) as {
      traceparent: string;
    };
    expect(stored.traceparent).toBe(`00-${traceId}-${spanId(service)}-01`);

    // The relay runs outside any request (its own timer), as in production.
    const relay = new OutboxRelay(db, bus, log, { schema });
    expect(await relay.drain()).toBe(1);
    const feed = await h.waitForFeed(tenant, 1);
    expect(feed.map((e) => e.id)).toEqual([event.id]);

    const spans = exporter.getFinishedSpans();
    const publish = spans.find((s) => s.name === `publish ${DOMAIN_EVENTS_TOPIC}`);
    const consume = spans.find((s) => s.name === `process ${DOMAIN_EVENTS_TOPIC}`);
    expect(publish).toBeDefined();
    expect(consume).toBeDefined();
    // gateway → service → relay's publish span → events consumer's span: one trace, each the parent of the next.
    expect(service.spanContext().traceId).toBe(traceId);
    expect(publish!.spanContext().traceId).toBe(traceId);
    expect(publish!.parentSpanContext?.spanId).toBe(spanId(service));
    expect(publish!.kind).toBe(SpanKind.PRODUCER);
    expect(publish!.attributes["messaging.message.id"]).toBe(event.id);
    expect(consume!.spanContext().traceId).toBe(traceId);
    expect(consume!.parentSpanContext?.spanId).toBe(publish!.spanContext().spanId);
    expect(consume!.kind).toBe(SpanKind.CONSUMER);
  } finally {
    await bus.close();
    await db.destroy();
  }
});
