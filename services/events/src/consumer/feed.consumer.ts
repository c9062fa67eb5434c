/**
 * Consumes domain events from the bus into the feed. The valid events of a
 * delivered batch are appended in one transaction (EventsRepository.appendBatch:
 * duplicates dropped by id, without consuming a sequence number): on the
 * Postgres bus in this database, the bus's own transaction for the batch, which
 * also advances the group's position (SubscribeOptions.db), so the feed and the
 * position commit together; any failure there is thrown, and the bus hands the
 * batch over again at once without that transaction, where what follows
 * applies. A message
 * that is not a valid event is logged and skipped. An event that Postgres
 * refuses as data (SQLSTATE class 22) fails its batch's transaction: the batch
 * is then appended event by event, each in its own transaction, so the good
 * events land and the refused one is logged and skipped: neither must ever
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
 * Each message is handled in a span of its own whose parent is the trace
 * context in its headers (the relay's span for that event, itself in the trace
 * of the request that wrote it), open from its parsing to the end of its
 * batch's append. The batch's transaction runs in the span of its first event
 * (its queries join that trace); a per-event append runs in its event's span.
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
import { startConsumeSpan, type ConsumeSpan } from "@dpp/kit/tracing";
import type { DomainEvent } from "@dpp/contract";
import type { Kysely, Transaction } from "kysely";
import { parseDomainEvent } from "../domain";
import type { EventsDB } from "../store/schema";
import type { AppendResult, EventsRepository } from "../store/events.repository";

/** The default consumer group (KAFKA_CONSUMER_GROUP sets it). */
export const FEED_CONSUMER_GROUP = DEFAULT_FEED_CONSUMER_GROUP;

type Appender = Pick<EventsRepository, "appendBatch">;

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
): (messages: BusMessage[], tx?: Transaction<any>) => Promise<void> {
  const uncatalogued = new Set<string>();
  return async (messages, tx) => {
    const valid: Array<{ event: DomainEvent; span: ConsumeSpan }> = [];
    try {
      for (const m of messages) {
        const span = startConsumeSpan(topic, m.headers, { "messaging.message.conversation_id": m.key });
        const event = parse(m);
        if (event) valid.push({ event, span });
        else span.end();
      }
      if (valid.length === 0) return;
      let results: Array<AppendResult | undefined>;
      try {
        results = await valid[0]!.span.run(() =>
          repo.appendBatch(
            valid.map((v) => v.event),
            tx as Transaction<EventsDB> | undefined,
          ),
        );
      } catch (err) {
        // In the bus's transaction nothing more can be done: it is rolled back, and the batch comes again without it.
        if (tx || !isRefusedData(err)) throw err;
        results = [];
        for (const v of valid) results.push(await appendAlone(v.event, v.span));
      }
      valid.forEach((v, i) => report(v.event, results[i]));
      for (const v of valid.splice(0)) v.span.end();
    } catch (err) {
      for (const v of valid) v.span.end(err);
      throw err;
    }
  };

  function parse(m: BusMessage): DomainEvent | undefined {
    const parsed = parseDomainEvent(m.value);
    if (!parsed.ok) {
      log.warn(
        { reason: parsed.reason, key: m.key, value: preview(m.value) },
        "skipping malformed domain event",
      );
      return undefined;
    }
    const e = parsed.event;
    if (!isCatalogued(e.type) && !uncatalogued.has(e.type)) {
      uncatalogued.add(e.type);
      log.warn({ type: e.type, event_id: e.id }, "event type not in the catalogue; accepted");
    }
    return e;
  }

  /** After the batch's transaction refused some event's data: this event alone; undefined when refused. */
  async function appendAlone(e: DomainEvent, span: ConsumeSpan): Promise<AppendResult | undefined> {
    try {
      return (await span.run(() => repo.appendBatch([e])))[0];
    } catch (err) {
      if (!isRefusedData(err)) throw err;
      log.warn({ ...where(e), err }, "skipping domain event refused by the database");
      return undefined;
    }
  }

  function report(e: DomainEvent, res: AppendResult | undefined): void {
    if (!res) return;
    if (res.status === "duplicate") log.debug(where(e), "duplicate event dropped");
    else log.debug({ ...where(e), sequence: res.sequence }, "event appended to feed");
  }
}

function where(e: DomainEvent) {
  return { event_id: e.id, type: e.type, organization_id: e.organization_id, livemode: e.livemode };
}

/** Subscribes the feed; `db` is the repository's pool (a Postgres bus in its database joins its transactions). */
export function subscribeFeed(
  bus: Bus,
  repo: Appender,
  log: Logger,
  names: { topic?: string; group?: string; db?: Kysely<EventsDB> } = {},
): Promise<Subscription> {
  const topic = names.topic ?? DOMAIN_EVENTS_TOPIC;
  return bus.subscribe({
    group: names.group ?? FEED_CONSUMER_GROUP,
    topic,
    db: names.db,
    handler: createFeedHandler(repo, log.child({ component: "feed-consumer" }), topic),
  });
}
