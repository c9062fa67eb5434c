/**
 * Consumes domain events from the bus into the feed. Each event is appended in
 * its own transaction (duplicates dropped by id). A message that is not a valid
 * event, or that Postgres refuses as data, is logged and skipped: it must never
 * block the feed. Any other failure (connection, timeout) is thrown so the bus
 * redelivers the batch; events already appended are then dropped as duplicates.
 *
 * Types not in the kit's EVENT_CATALOGUE: accepted (any `<resource>.<verb>`)
 * and logged at warn, once per type and process. Producers can only build
 * catalogued types (domainEvent), so an unknown type means a producer deployed
 * ahead of this service; refusing it would lose that event from the feed for
 * good, which is worse than serving a type the documentation lists a release
 * later.
 *
 * Each message is handled in a span whose parent is the trace context in its
 * headers (the relay's span for that event, itself in the trace of the request
 * that wrote it), so the feed transaction joins that trace.
 *
 * The subscription joins and recovers in the background: the service serves
 * the feed as soon as Postgres answers, whatever the bus does (its state is the
 * gRPC health entry "dpp.bus", logged on every change).
 */
import { isCatalogued } from "@dpp/contract";
import {
  DEFAULT_FEED_CONSUMER_GROUP,
  DOMAIN_EVENTS_TOPIC,
  type Bus,
  type BusMessage,
  type Logger,
  type Subscription,
} from "@dpp/kit";
import { withConsumeSpan } from "@dpp/kit/tracing";
import { parseDomainEvent } from "../domain";
import type { EventsRepository } from "../store/events.repository";

/** The default consumer group (KAFKA_CONSUMER_GROUP sets it). */
export const FEED_CONSUMER_GROUP = DEFAULT_FEED_CONSUMER_GROUP;

type Appender = Pick<EventsRepository, "append">;

/**
 * SQLSTATE class 22 (data exception: an out-of-range timestamp, a \u0000 in
 * jsonb, ...): the event itself is refused and retrying cannot help.
 */
export function isRefusedData(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^22[0-9A-Z]{3}$/.test(code);
}

function preview(value: string): string {
  return value.length > 200 ? `${value.slice(0, 200)}...` : value;
}

export function createFeedHandler(
  repo: Appender,
  log: Logger,
  topic: string = DOMAIN_EVENTS_TOPIC,
): (messages: BusMessage[]) => Promise<void> {
  const uncatalogued = new Set<string>();
  return async (messages) => {
    for (const m of messages)
      await withConsumeSpan(topic, m.headers, { "messaging.message.conversation_id": m.key }, () =>
        handle(m),
      );
  };

  async function handle(m: BusMessage): Promise<void> {
    const parsed = parseDomainEvent(m.value);
    if (!parsed.ok) {
      log.warn(
        { reason: parsed.reason, key: m.key, value: preview(m.value) },
        "skipping malformed domain event",
      );
      return;
    }
    const e = parsed.event;
    if (!isCatalogued(e.type) && !uncatalogued.has(e.type)) {
      uncatalogued.add(e.type);
      log.warn({ type: e.type, event_id: e.id }, "event type not in the catalogue; accepted");
    }
    const where = {
      event_id: e.id,
      type: e.type,
      organization_id: e.organization_id,
      livemode: e.livemode,
    };
    try {
      const res = await repo.append(e);
      if (res.status === "duplicate") log.debug(where, "duplicate event dropped");
      else log.debug({ ...where, sequence: res.sequence }, "event appended to feed");
    } catch (err) {
      if (!isRefusedData(err)) throw err;
      log.warn({ ...where, err }, "skipping domain event refused by the database");
    }
  }
}

export function subscribeFeed(
  bus: Bus,
  repo: Appender,
  log: Logger,
  names: { topic?: string; group?: string } = {},
): Promise<Subscription> {
  const topic = names.topic ?? DOMAIN_EVENTS_TOPIC;
  return bus.subscribe({
    group: names.group ?? FEED_CONSUMER_GROUP,
    topic,
    handler: createFeedHandler(repo, log.child({ component: "feed-consumer" }), topic),
  });
}
