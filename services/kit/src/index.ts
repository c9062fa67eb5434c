export * from "./config";
export * from "./logger";
export * from "./context";
export * from "./internal-auth";
export * from "./grpc";
export * from "./server";
export * from "./db";
export * from "./statement";
export * from "./encode";
export * from "./pagination";
export * from "./events";
export * from "./bus";
export * from "./bus-factory";
export * from "./kafka-config";
export type { KafkaBus, KafkaBusOptions, KafkaClient } from "./kafka-bus";
export * from "./outbox";
export * from "./jobs";
export * from "./service";
export * from "./idempotency";
export * from "./deadline";

// Keyed calls: effects run once per Idempotency-Key (docs/writes-under-a-key.md).
export { once, EFFECT_LEASE_MS_DEFAULT, type EffectRun, type OnceOptions } from "./effects";
