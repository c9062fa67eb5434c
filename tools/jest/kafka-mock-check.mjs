// globalSetup of the kit project (jest runs it only when a kit test is selected): the kit's Kafka tests
// start librdkafka's mock cluster (tools/kafka-mock/mock_cluster.py) of their own, which needs Debian's
// python3-confluent-kafka. Without it, one message here instead of every Kafka test failing on its own.
import { spawnSync } from "node:child_process";
import path from "node:path";

const SCRIPT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../kafka-mock/mock_cluster.py");

export default function kafkaMockCheck() {
  const r = spawnSync("/usr/bin/python3", [SCRIPT, "--check"], { encoding: "utf8" });
  if (r.status === 0) return;
  const lines = (r.stderr ?? "").trim().split("\n");
  const said = lines.find((l) => l.startsWith("kafka-mock: ")) ?? lines.at(-1);
  const cause = r.error
    ? `/usr/bin/python3: ${r.error.message}`
    : said.replace(/^kafka-mock: /, "") || `exit ${r.status}`;
  const error = new Error(
    "the kit's Kafka tests need librdkafka's mock cluster (Debian's python3-confluent-kafka), which cannot " +
      `run here: ${cause}. Run \`bash tools/bootstrap.sh --test\` (npm test runs it first; it installs ` +
      "with apt-get, as root or through sudo), then the tests again.",
  );
  error.stack = error.message;
  throw error;
}
