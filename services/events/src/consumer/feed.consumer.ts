/**
 * Consumes domain events from the bus into the feed. Each event is appended in
 * its own transaction (duplicates dropped by id). A message that is not a valid
 * event, or that Postgres refuses as data, is logged and skipped: it must never
 * block the feed. Any other failure (connection, timeout) is thrown so the bus
 * redelivers the batch; events already appended are then dropped as duplicates.
 */
import { DOMAIN_EVENTS_TOPIC, type Bus, type BusMessage, type Logger, type Subscription } from "@dpp/kit";
import { parseDomainEvent } from "../domain";
import type { EventsRepository } from "../store/events.repository";

export const FEED_CONSUMER_GROUP = "events";

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

export function createFeedHandler(repo: Appender, log: Logger): (messages: BusMessage[]) => Promise<void> {
  return async (messages) => {
    for (const m of messages) {
      const parsed = parseDomainEvent(m.value);
      if (!parsed.ok) {
        log.warn(
          { reason: parsed.reason, key: m.key, value: preview(m.value) },
          "skipping malformed domain event",
        );
        continue;
      }
      const e = parsed.event;
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
  };
}

export function subscribeFeed(bus: Bus, repo: Appender, log: Logger): Promise<Subscription> {
  return bus.subscribe({
    group: FEED_CONSUMER_GROUP,
    topic: DOMAIN_EVENTS_TOPIC,
    handler: createFeedHandler(repo, log.child({ component: "feed-consumer" })),
  });
}
