/**
 * librdkafka's mock cluster (tools/kafka-mock/mock_cluster.py), a
 * Kafka-protocol broker on 127.0.0.1, for the tests of the Kafka adapter
 * against a real broker protocol. It cannot serve kafkajs' idempotent producer
 * nor topic creation: the adapter runs on it with KAFKA_MOCK_SETTINGS, its
 * test-only settings.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import path from "node:path";
import readline from "node:readline";
import type { KafkaTestOnlySettings } from "../../src/kafka-bus";

const SCRIPT = path.resolve(__dirname, "../../../../tools/kafka-mock/mock_cluster.py");

/** What the mock cannot serve, replaced in tests only (never in production: no variable reaches them). */
export const KAFKA_MOCK_SETTINGS: KafkaTestOnlySettings = {
  nonIdempotentProducer: true,
  brokerCreatesTopics: true,
};

export interface KafkaMock {
  /** host:port of the bootstrap broker. */
  brokers: string;
  /** Sends one fault-injection command (see mock_cluster.py) and waits for its answer. */
  control(command: string): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a mock cluster of our own (its faults are ours to inject). */
export async function startKafkaMock(): Promise<KafkaMock> {
  const child: ChildProcessWithoutNullStreams = spawn("/usr/bin/python3", [SCRIPT], { stdio: "pipe" });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const lines = readline.createInterface({ input: child.stdout });
  const pending: Array<(line: string) => void> = [];
  const queued: string[] = [];
  lines.on("line", (line) => {
    const waiter = pending.shift();
    if (waiter) waiter(line);
    else queued.push(line);
  });
  const nextLine = () =>
    new Promise<string>((resolve, reject) => {
      const q = queued.shift();
      if (q !== undefined) return resolve(q);
      pending.push(resolve);
      child.once("exit", (code) =>
        reject(
          new Error(
            `the Kafka mock cluster exited (${code}): ${stderr.trim() || "no output"}. ` +
              "It needs Debian's python3-confluent-kafka: `bash tools/bootstrap.sh --test` (run by npm test) installs it.",
          ),
        ),
      );
    });
  child.once("error", () => undefined);
  const first = JSON.parse(await nextLine()) as { bootstrap: string };
  let chain = Promise.resolve();
  return {
    brokers: first.bootstrap,
    control: (command) => {
      const run = chain.then(async () => {
        child.stdin.write(`${command}\n`);
        const answer = JSON.parse(await nextLine()) as { ok: boolean; error?: string };
        if (!answer.ok) throw new Error(`kafka mock: ${command}: ${answer.error}`);
      });
      chain = run.catch(() => undefined);
      return run;
    },
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.stdin.end();
      await exited;
    },
  };
}
