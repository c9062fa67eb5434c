/**
 * Feed retention: events that entered the feed more than FEED_RETENTION_DAYS
 * days ago are deleted by a periodic leader job (every
 * FEED_RETENTION_INTERVAL_MS; one replica at a time), in chunks. Days are
 * counted from arrival (received_at), not from the event's created_at, so events
 * replayed after a long outage are not deleted on arrival. 0 days turns
 * retention off. This is platform maintenance across every tenant, the one
 * kind of query here that does not filter one organization and mode.
 */
import type { EventsRepository } from "./events.repository";

/** One pass: deletes every expired event, chunk by chunk; returns how many. */
export async function expireFeedEvents(
  repo: Pick<EventsRepository, "deleteOlderThan">,
  days: number,
  chunk = 5_000,
): Promise<number> {
  if (days <= 0) return 0;
  let total = 0;
  for (;;) {
    const n = await repo.deleteOlderThan(days, chunk);
    total += n;
    if (n < chunk) return total;
  }
}
