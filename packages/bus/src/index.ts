/**
 * @dpp/bus: the bus domain events travel on between services. bus.ts holds the interface every producer and
 * consumer uses and the Postgres-table transport (the one-machine default); kafka-bus.ts the Kafka adapter,
 * loaded only when KAFKA_BROKERS is set (createBus). The kit's service template makes each service's bus and runs
 * its outbox relay into it; a service's own code consumes through `rt.bus`, whose types `@dpp/kit` re-exports.
 *
 * Built on `@dpp/kit/base` only (configuration, logger, database, leader jobs): the rest of the kit imports this
 * package.
 */
export * from "./bus";
export * from "./bus-factory";
export * from "./kafka-config";
export type { KafkaBus, KafkaBusOptions, KafkaClient } from "./kafka-bus";
