#!/usr/bin/env bash
# Runs a command against librdkafka's mock cluster (mock_cluster.py beside this
# file), a Kafka-protocol broker on 127.0.0.1, then stops it.
#
#   bash tools/kafka-mock/run.sh                 the Kafka part of the bus contract and the
#                                                Kafka adapter's tests against the mock
#   bash tools/kafka-mock/run.sh npm test        any command; it finds the broker in
#                                                KAFKA_MOCK_BROKERS (host:port)
#   bash tools/kafka-mock/run.sh --install-only  install the mock's package and exit
#
# Installs Debian's python3-confluent-kafka (which brings librdkafka1) through
# apt-get when librdkafka is missing. The tests run the adapter on the mock with
# named test-only settings (packages/bus/test/support/kafka-mock.ts), never the
# production ones, and list by name what the mock cannot serve.
set -uo pipefail
cd "$(dirname "$0")/../.."

have_librdkafka() { /usr/bin/python3 -c 'import ctypes; ctypes.CDLL("librdkafka.so.1")' >/dev/null 2>&1; }

if ! have_librdkafka; then
  echo "kafka-mock: installing python3-confluent-kafka (librdkafka's mock cluster)..." >&2
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "kafka-mock: apt-get is not available; install python3-confluent-kafka yourself." >&2
    exit 1
  fi
  if ! apt-get install -y python3-confluent-kafka >&2; then
    apt-get update >&2 && apt-get install -y python3-confluent-kafka >&2
  fi
  if ! have_librdkafka; then
    echo "kafka-mock: librdkafka still missing after the install." >&2
    exit 1
  fi
fi
if [ "${1:-}" = "--install-only" ]; then exit 0; fi

fifo_dir=$(mktemp -d)
mkfifo "$fifo_dir/in"
/usr/bin/python3 tools/kafka-mock/mock_cluster.py <"$fifo_dir/in" >"$fifo_dir/out" 2>"$fifo_dir/err" &
mock_pid=$!
exec 9>"$fifo_dir/in" # holds the mock's stdin open; closing it stops the mock
stop_mock() {
  exec 9>&-
  wait "$mock_pid" 2>/dev/null
  rm -rf "$fifo_dir"
}
trap stop_mock EXIT

brokers=""
for _ in $(seq 1 100); do
  brokers=$(sed -nE 's/.*"bootstrap": "([^"]+)".*/\1/p' "$fifo_dir/out" | head -n 1)
  [ -n "$brokers" ] && break
  if ! kill -0 "$mock_pid" 2>/dev/null; then break; fi
  sleep 0.1
done
if [ -z "$brokers" ]; then
  echo "kafka-mock: the mock cluster did not start: $(cat "$fifo_dir/err")" >&2
  exit 1
fi
echo "kafka-mock: librdkafka's mock cluster at $brokers (stopped when the command ends)" >&2
export KAFKA_MOCK_BROKERS="$brokers"

if [ "$#" -eq 0 ]; then
  set -- npx jest --selectProjects bus --testPathPatterns 'test/(integration/(bus\.contract|kafka-recovery)|kafka-bus)' --verbose
fi
"$@"
