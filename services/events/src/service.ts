/**
 * The events service: consumes the domain events from the bus into the public
 * feed (numbered per organization and mode in commit order) and serves it.
 */
import { defineService, type ServiceRuntime } from "@dpp/kit";
import { eventsV1 } from "@dpp/proto";
import { eventsMigrations } from "../migrations";
import { eventsEnv } from "./config";
import { subscribeFeed } from "./consumer/feed.consumer";
import { createEventsRpc } from "./rpc/events.rpc";
import { EventsRepository } from "./store/events.repository";
import { expireFeedEvents } from "./store/feed-retention";
import { EVENTS_SCHEMA, type EventsDB } from "./store/schema";

export const eventsService = defineService({
  name: "events",
  schema: EVENTS_SCHEMA,
  migrations: eventsMigrations,
  env: eventsEnv,
  grpcPort: 50052,
  start: async (rt: ServiceRuntime<typeof eventsEnv, EventsDB>) => {
    const repo = new EventsRepository(rt.db);
    // Registers the subscription and returns: the consumer joins its group in the background.
    const subscription = await subscribeFeed(rt.bus, repo, rt.log, {
      topic: rt.config.KAFKA_TOPIC,
      group: rt.config.KAFKA_CONSUMER_GROUP,
      db: rt.db,
    });
    // Stopped first on SIGTERM (the kit's drain): no new message is taken while the calls in flight finish.
    rt.onDrain(() => subscription.stop());
    const days = rt.config.FEED_RETENTION_DAYS;
    const retention =
      days > 0
        ? rt.job({
            name: "events:feed-retention",
            intervalMs: rt.config.FEED_RETENTION_INTERVAL_MS,
            run: () => expireFeedEvents(repo, days),
            report: "feed retention deleted old events",
          })
        : undefined;
    rt.serve(eventsV1.EventsService, createEventsRpc(repo));
    return { repo, retention };
  },
});
