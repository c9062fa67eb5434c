/**
 * A recording stand-in for the kafkajs client (the adapter takes a
 * `createClient` option for it): it answers the admin, producer and consumer
 * calls the adapter makes, records them, and lets a test make the broker fail
 * (connections refused, a send refused, a topic gone, a consumer crash).
 * Sends to a topic that does not exist fail as a broker answers them
 * (UNKNOWN_TOPIC_OR_PARTITION).
 */
import type { KafkaConfig } from "kafkajs";
import type { KafkaClient } from "../../src/kafka-bus";

type Call = [string, ...unknown[]];

export interface FakeBatchMessage {
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers?: Record<string, Buffer | string | undefined>;
}

export class FakeKafka {
  calls: Call[] = [];
  config?: KafkaConfig;
  existingTopics: string[] = [];
  failSend: Error | null = null;
  failCreateTopics: Error | null = null;
  failAdminConnect: Error | null = null;
  producerHandlers = new Map<string, () => void>();
  eachBatch?: (args: unknown) => Promise<void>;

  client(): (config: KafkaConfig) => KafkaClient {
    return (config) => {
      this.config = config;
      return this as unknown as KafkaClient;
    };
  }

  /** What the broker answers for default.replication.factor (null: DescribeConfigs fails). */
  brokerDefaultReplicationFactor: string | null = "3";
  brokers = 3;

  admin() {
    return {
      connect: async () => {
        this.calls.push(["admin.connect"]);
        if (this.failAdminConnect) throw this.failAdminConnect;
      },
      describeCluster: async () => ({
        brokers: Array.from({ length: this.brokers }, (_, i) => ({ nodeId: i + 1, host: "k", port: 9092 })),
        controller: 1,
        clusterId: "c",
      }),
      describeConfigs: async (o: unknown) => {
        this.calls.push(["admin.describeConfigs", o]);
        if (this.brokerDefaultReplicationFactor === null)
          throw Object.assign(new Error("not authorized"), { type: "CLUSTER_AUTHORIZATION_FAILED" });
        return {
          resources: [
            {
              configEntries: [
                {
                  configName: "default.replication.factor",
                  configValue: this.brokerDefaultReplicationFactor,
                },
              ],
            },
          ],
        };
      },
      listTopics: async () => {
        this.calls.push(["admin.listTopics"]);
        return [...this.existingTopics];
      },
      createTopics: async (o: { topics: { topic: string }[] }) => {
        this.calls.push(["admin.createTopics", o]);
        if (this.failCreateTopics) throw this.failCreateTopics;
        this.existingTopics.push(...o.topics.map((t) => t.topic));
        return true;
      },
      disconnect: async () => void this.calls.push(["admin.disconnect"]),
    };
  }

  producer(config: unknown) {
    this.calls.push(["producer", config]);
    return {
      events: { DISCONNECT: "producer.disconnect" },
      on: (event: string, fn: () => void) => void this.producerHandlers.set(event, fn),
      connect: async () => void this.calls.push(["producer.connect"]),
      send: async (record: { topic: string }) => {
        this.calls.push(["producer.send", record]);
        if (this.failSend) throw this.failSend;
        if (!this.existingTopics.includes(record.topic))
          throw Object.assign(new Error("This server does not host this topic-partition"), {
            type: "UNKNOWN_TOPIC_OR_PARTITION",
            retriable: true,
          });
        return [];
      },
      disconnect: async () => void this.calls.push(["producer.disconnect"]),
    };
  }

  /** Handlers the adapter registered on the latest consumer, by event name. */
  consumerHandlers = new Map<string, (e: unknown) => void>();
  failConsumerConnect: Error | null = null;

  /** kafkajs reports a crash of the running consumer (it has disconnected it). */
  crashConsumer(error: Error): void {
    this.consumerHandlers.get("consumer.crash")!({ payload: { error, restart: false } });
  }

  consumer(config: unknown) {
    this.calls.push(["consumer", config]);
    const handlers = new Map<string, (e: unknown) => void>();
    this.consumerHandlers = handlers;
    return {
      events: {
        CRASH: "consumer.crash",
        DISCONNECT: "consumer.disconnect",
        GROUP_JOIN: "consumer.group_join",
        FETCH: "consumer.fetch",
        END_BATCH_PROCESS: "consumer.end_batch_process",
      },
      on: (event: string, fn: (e: unknown) => void) => {
        handlers.set(event, fn);
        return () => handlers.delete(event);
      },
      connect: async () => {
        this.calls.push(["consumer.connect"]);
        if (this.failConsumerConnect) throw this.failConsumerConnect;
      },
      subscribe: async (o: unknown) => void this.calls.push(["consumer.subscribe", o]),
      run: async (o: { eachBatch: (args: unknown) => Promise<void> } & Record<string, unknown>) => {
        const { eachBatch, ...rest } = o;
        this.calls.push(["consumer.run", rest]);
        this.eachBatch = eachBatch;
        // As kafkajs: run() resolves after the join; fetches follow (empty ones here: deliver() hands batches).
        handlers.get("consumer.group_join")?.({});
        setImmediate(() => {
          handlers.get("consumer.fetch")?.({ payload: { numberOfBatches: 0 } });
          handlers.get("consumer.fetch")?.({ payload: { numberOfBatches: 0 } });
        });
      },
      commitOffsets: async (offsets: unknown) => void this.calls.push(["consumer.commitOffsets", offsets]),
      disconnect: async () => void this.calls.push(["consumer.disconnect"]),
    };
  }

  /** Feeds one fetched batch to the adapter's eachBatch, as kafkajs would. */
  deliver(
    topic: string,
    partition: number,
    messages: FakeBatchMessage[],
    highWatermark?: string,
  ): Promise<void> {
    return this.eachBatch!({
      batch: { topic, partition, messages, ...(highWatermark === undefined ? {} : { highWatermark }) },
      resolveOffset: (o: string) => void this.calls.push(["resolveOffset", o]),
      heartbeat: async () => void this.calls.push(["heartbeat"]),
      isRunning: () => true,
      isStale: () => false,
    });
  }

  named(name: string): unknown[][] {
    return this.calls.filter((c) => c[0] === name).map((c) => c.slice(1));
  }
}
