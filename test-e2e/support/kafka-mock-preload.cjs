/**
 * Preloaded (node --require) into each service process of an e2e stack that runs on librdkafka's mock cluster
 * (tools/kafka-mock/mock_cluster.py), which cannot serve kafkajs' idempotent producer: every producer the
 * service makes is a plain one (acks = all, one request in flight), as the bus's own tests run it on the mock
 * (KAFKA_MOCK_SETTINGS, packages/bus/test/support/kafka-mock.ts). The services never read a variable for this;
 * only tests preload this file. kafkajs is required by the service's bundle from the build's node_modules,
 * so the module patched is the one the bundle loads.
 */
const path = require("node:path");

const bundle = process.argv[1];
if (bundle) {
  let kafkajs;
  try {
    kafkajs = require(require.resolve("kafkajs", { paths: [path.dirname(bundle)] }));
  } catch {
    kafkajs = undefined;
  }
  if (kafkajs) {
    const producer = kafkajs.Kafka.prototype.producer;
    kafkajs.Kafka.prototype.producer = function (options = {}) {
      return producer.call(this, { ...options, idempotent: false, maxInFlightRequests: 1 });
    };
  }
}
