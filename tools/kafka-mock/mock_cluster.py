#!/usr/bin/python3
"""
librdkafka's mock cluster: a Kafka-protocol broker written in C, listening on
127.0.0.1, from Debian's librdkafka1 (installed with python3-confluent-kafka,
which `bash tools/bootstrap.sh --test`, run by `npm test`, installs). It
answers produce, fetch, consumer groups, rebalancing, offset commits and
resume; it does not answer topic creation or deletion, nor
DescribeGroups/ListGroups, and it reports a controller id that is not one of
its brokers (so kafkajs' idempotent producer cannot start on it). Topics are
created on first use (auto-creation).

Its fault injection is librdkafka's C API (rd_kafka_mock_*), which the Python
binding does not expose, so the cluster is made and driven through ctypes.

    /usr/bin/python3 tools/kafka-mock/mock_cluster.py --check

exits 0 when librdkafka loads here with every function used below (the
cluster can run), else non-zero with the reason on stderr (bootstrap.sh --test
and the kit's jest globalSetup ask it).

    /usr/bin/python3 tools/kafka-mock/mock_cluster.py [--brokers N]

prints one JSON line {"bootstrap": "127.0.0.1:PORT", "librdkafka": "2.0.2"},
then reads commands on stdin, one per line, and answers each with one JSON
line ({"ok": true} or {"ok": false, "error": "..."}):

    broker-down ID                  the broker closes its connections and refuses new ones (a stopped broker)
    broker-up ID                    it serves again
    topic-error TOPIC CODE          metadata answers CODE for TOPIC (3 = UNKNOWN_TOPIC_OR_PARTITION: a deleted topic); 0 clears
    request-errors APIKEY CODE N    the next N requests with APIKEY (0 Produce, 1 Fetch, 3 Metadata, ...) answer CODE
    create-topic TOPIC PARTITIONS   creates TOPIC with PARTITIONS partitions (replication factor 1)

End of input (or SIGTERM) destroys the cluster and exits.
"""
import argparse
import ctypes
import json
import signal
import sys


def load():
    try:
        lib = ctypes.CDLL("librdkafka.so.1")
    except OSError as e:
        sys.stderr.write(
            "kafka-mock: librdkafka cannot be loaded (%s)\n"
            "kafka-mock: install Debian's python3-confluent-kafka: bash tools/bootstrap.sh --test\n" % e
        )
        sys.exit(3)
    p, s, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    sig = {
        "rd_kafka_version_str": (s, []),
        "rd_kafka_conf_new": (p, []),
        "rd_kafka_conf_set": (i, [p, s, s, s, ctypes.c_size_t]),
        "rd_kafka_new": (p, [i, p, s, ctypes.c_size_t]),
        "rd_kafka_destroy": (None, [p]),
        "rd_kafka_handle_mock_cluster": (p, [p]),
        "rd_kafka_mock_cluster_bootstraps": (s, [p]),
        "rd_kafka_mock_broker_set_down": (i, [p, ctypes.c_int32]),
        "rd_kafka_mock_broker_set_up": (i, [p, ctypes.c_int32]),
        "rd_kafka_mock_topic_set_error": (None, [p, s, i]),
        "rd_kafka_mock_topic_create": (i, [p, s, i, i]),
        "rd_kafka_mock_push_request_errors_array": (None, [p, ctypes.c_int16, ctypes.c_size_t, ctypes.POINTER(i)]),
        "rd_kafka_err2str": (s, [i]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", type=int, default=1)
    ap.add_argument("--check", action="store_true", help="exit 0 when the cluster can run here")
    opts = ap.parse_args()
    lib = load()
    if opts.check:
        sys.exit(0)
    err = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    for k, v in (("test.mock.num.brokers", str(opts.brokers)), ("log_level", "3")):
        if lib.rd_kafka_conf_set(conf, k.encode(), v.encode(), err, len(err)) != 0:
            sys.stderr.write("kafka-mock: %s\n" % err.value.decode())
            sys.exit(3)
    # A producer handle owns the mock cluster; it is never used to produce.
    rk = lib.rd_kafka_new(0, conf, err, len(err))
    if not rk:
        sys.stderr.write("kafka-mock: %s\n" % err.value.decode())
        sys.exit(3)
    mc = lib.rd_kafka_handle_mock_cluster(rk)
    bootstrap = lib.rd_kafka_mock_cluster_bootstraps(mc).decode()

    def stop(*_):
        lib.rd_kafka_destroy(rk)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    print(json.dumps({"bootstrap": bootstrap, "librdkafka": lib.rd_kafka_version_str().decode()}), flush=True)

    def code(rc):
        return {"ok": True} if rc == 0 else {"ok": False, "error": lib.rd_kafka_err2str(rc).decode()}

    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        cmd, args = words[0], words[1:]
        try:
            if cmd == "broker-down":
                out = code(lib.rd_kafka_mock_broker_set_down(mc, int(args[0])))
            elif cmd == "broker-up":
                out = code(lib.rd_kafka_mock_broker_set_up(mc, int(args[0])))
            elif cmd == "topic-error":
                lib.rd_kafka_mock_topic_set_error(mc, args[0].encode(), int(args[1]))
                out = {"ok": True}
            elif cmd == "request-errors":
                n = int(args[2])
                errors = (ctypes.c_int * n)(*([int(args[1])] * n))
                lib.rd_kafka_mock_push_request_errors_array(mc, int(args[0]), n, errors)
                out = {"ok": True}
            elif cmd == "create-topic":
                out = code(lib.rd_kafka_mock_topic_create(mc, args[0].encode(), int(args[1]), 1))
            else:
                out = {"ok": False, "error": "unknown command %s" % cmd}
        except (IndexError, ValueError) as e:
            out = {"ok": False, "error": "bad arguments for %s: %s" % (cmd, e)}
        print(json.dumps(out), flush=True)
    stop()


if __name__ == "__main__":
    main()
