/**
 * Prometheus metrics of a service (docs/decisions/0063-metrics.md; every series is listed in docs/metrics.md).
 *
 * Each service has one `ServiceMetrics`, made by the service template: its own registry (the local stack runs
 * several services in one process, each in a thread or, in tests, side by side), every series labelled with
 * `service`, served as the Prometheus text format at `/metrics` on METRICS_PORT (`serveMetrics`).
 *
 * Hot paths pay one map lookup and an addition: the instruments' children are made once per label set and kept
 * (prom-client hashes the labels of every `inc(labels)`; a kept child does not). What needs a query (the outbox
 * backlog, a queue's age, a consumer's lag) is computed when Prometheus scrapes, never per request.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { collectDefaultMetrics, Gauge, Registry, type Metric } from "prom-client";
import type { Logger } from "./logger";

/** Seconds: from 5 ms (a cached read) to 10 s (past every deadline the platform sets). */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The outcome of a keyed call: run for the first time, answered from its record, refused busy or conflicting. */
export type IdempotencyOutcome = "new" | "replayed" | "busy" | "conflict";

/** How a pass of a leader job ended: it ran, it failed, another replica held the lock. */
export type LeaderJobResult = "ok" | "error" | "skipped";

/** What a scrape-time gauge reads: one value per label set (labels in the gauge's order). */
export type Sample = { labels?: Record<string, string>; value: number };

/** A counter child kept per label values (see the header). */
interface Inc {
  inc(value?: number): void;
}

/** The methods an HTTP route label's method names as they are. */
const HTTP_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/** The gRPC status codes by number, as the code label names them. */
const GRPC_CODES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
];

/** The code label of a gRPC status number. */
export function grpcCodeName(code: number | undefined): string {
  return GRPC_CODES[code ?? 2] ?? String(code);
}

/** The instruments of one gRPC method as a server answers it: `done(code, seconds)` per call. */
export interface GrpcServerMethodMetrics {
  done(code: number, seconds: number): void;
}

/** The instruments of one HTTP route: `done(status, seconds)` per answered request. */
export interface HttpRouteMetrics {
  done(status: number, seconds: number): void;
}

/**
 * A counter whose children are plain cells: inc() is an addition (prom-client's own counter checks and hashes the
 * labels of every inc, a few microseconds). Rendered by prom-client's registry like its own (get()).
 */
class FastCounter {
  readonly type = "counter";
  readonly aggregator = "sum";
  private readonly cells = new Map<string, { labels: Record<string, string>; value: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
  ) {}

  /** The child of these label values (made once; keep it). */
  labels(labels: Record<string, string>): Inc {
    const key = this.labelNames.map((n) => labels[n] ?? "").join("\u0000");
    let cell = this.cells.get(key);
    if (!cell) this.cells.set(key, (cell = { labels: { ...labels }, value: 0 }));
    const c = cell;
    return {
      inc: (value = 1) => {
        c.value += value;
      },
    };
  }

  get() {
    const values = [...this.cells.values()].map((c) => ({ labels: c.labels, value: c.value }));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.cells.clear();
  }
}

/** A histogram whose children are plain cells: observe() finds its bucket and adds (see FastCounter). */
class FastHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  private readonly cells = new Map<
    string,
    { labels: Record<string, string>; counts: Float64Array; sum: number; count: number }
  >();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly bounds: readonly number[],
  ) {}

  /** The child of these label values (made once; keep it). */
  labels(labels: Record<string, string>): { observe(value: number): void } {
    const key = this.labelNames.map((n) => labels[n] ?? "").join("\u0000");
    let cell = this.cells.get(key);
    if (!cell)
      this.cells.set(
        key,
        (cell = {
          labels: { ...labels },
          counts: new Float64Array(this.bounds.length + 1),
          sum: 0,
          count: 0,
        }),
      );
    const c = cell;
    const bounds = this.bounds;
    return {
      observe: (value) => {
        let i = 0;
        while (i < bounds.length && value > bounds[i]!) i++;
        c.counts[i]!++;
        c.sum += value;
        c.count++;
      },
    };
  }

  get() {
    const values: Array<{ labels: Record<string, string | number>; value: number; metricName: string }> = [];
    for (const c of this.cells.values()) {
      let cumulative = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += c.counts[i]!;
        const le = i < this.bounds.length ? this.bounds[i]! : "+Inf";
        values.push({ labels: { ...c.labels, le }, value: cumulative, metricName: `${this.name}_bucket` });
      }
      values.push({ labels: c.labels, value: c.sum, metricName: `${this.name}_sum` });
      values.push({ labels: c.labels, value: c.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.cells.clear();
  }
}

export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly counters = new Map<string, FastCounter>();
  private readonly histograms = new Map<string, FastHistogram>();
  private readonly children = new Map<string, Inc>();
  private readonly scrapes: Array<{ gauge: Gauge<string>; read: () => Promise<Sample[]> | Sample[] }> = [];

  constructor(
    readonly service: string,
    private readonly log?: Logger,
    o: { defaultMetrics?: boolean } = {},
  ) {
    this.registry.setDefaultLabels({ service });
    // Node's and the process's own series (CPU, memory, heap, event loop lag, GC, handles).
    if (o.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  private counter(name: string, help: string, labelNames: string[]): FastCounter {
    let c = this.counters.get(name);
    if (!c) {
      c = new FastCounter(name, help, labelNames);
      this.registry.registerMetric(c as unknown as Metric);
      this.counters.set(name, c);
    }
    return c;
  }

  private histogram(name: string, help: string, labelNames: string[]): FastHistogram {
    let h = this.histograms.get(name);
    if (!h) {
      h = new FastHistogram(name, help, labelNames, DURATION_BUCKETS);
      this.registry.registerMetric(h as unknown as Metric);
      this.histograms.set(name, h);
    }
    return h;
  }

  /** The child of a counter for these label values, made once (see the header). */
  private child(name: string, counter: FastCounter, key: string, labels: Record<string, string>): Inc {
    const k = `${name}\u0000${key}`;
    let c = this.children.get(k);
    if (!c) {
      c = counter.labels(labels);
      this.children.set(k, c);
    }
    return c;
  }

  /** A gRPC method this service serves: dpp_grpc_server_handled_total and dpp_grpc_server_handling_seconds. */
  grpcServerMethod(method: string): GrpcServerMethodMetrics {
    const handled = this.counter(
      "dpp_grpc_server_handled_total",
      "gRPC calls this service answered, by method and status code",
      ["method", "code"],
    );
    const seconds = this.histogram(
      "dpp_grpc_server_handling_seconds",
      "Time from a gRPC call's arrival to its answer, by method",
      ["method"],
    ).labels({ method });
    const byCode: Inc[] = [];
    return {
      done: (code, s) => {
        (byCode[code] ??= handled.labels({ method, code: grpcCodeName(code) })).inc();
        seconds.observe(s);
      },
    };
  }

  /** A call of this service to another: dpp_grpc_client_handled_total{target,method,code}. */
  grpcClientMethod(target: string, method: string): (code: number) => void {
    const handled = this.counter(
      "dpp_grpc_client_handled_total",
      "gRPC calls this service made to another, by target service, method and status code",
      ["target", "method", "code"],
    );
    const byCode: Inc[] = [];
    return (code) => (byCode[code] ??= handled.labels({ target, method, code: grpcCodeName(code) })).inc();
  }

  /**
   * An HTTP route (the route's pattern, never the raw path): dpp_http_requests_total{route,method,status} and
   * dpp_http_request_duration_seconds{route,method} (no status: a latency per status would split each route's
   * buckets by every answer it gives; errors are read from the counter).
   */
  httpRoute(route: string, method: string): HttpRouteMetrics {
    const requests = this.counter(
      "dpp_http_requests_total",
      "HTTP requests answered, by route pattern, method and status",
      ["route", "method", "status"],
    );
    const seconds = this.histogram(
      "dpp_http_request_duration_seconds",
      "Time from an HTTP request's arrival to its answer sent, by route pattern and method",
      ["route", "method"],
    ).labels({ route, method });
    const byStatus = new Map<number, Inc>();
    return {
      done: (status, s) => {
        let c = byStatus.get(status);
        if (!c) byStatus.set(status, (c = requests.labels({ route, method, status: String(status) })));
        c.inc();
        seconds.observe(s);
      },
    };
  }

  private readonly httpRoutes = new Map<string, Map<string, HttpRouteMetrics>>();

  /**
   * Records one HTTP answer under its route's pattern (httpRoute's series; the instruments of each route and
   * method made once). A method outside the usual ones is counted as "other": a client's invented method never
   * makes a series of its own.
   */
  httpAnswer(route: string, method: string, status: number, seconds: number): void {
    const m = HTTP_METHODS.has(method) ? method : "other";
    let byMethod = this.httpRoutes.get(route);
    if (!byMethod) this.httpRoutes.set(route, (byMethod = new Map()));
    let r = byMethod.get(m);
    if (!r) byMethod.set(m, (r = this.httpRoute(route, m)));
    r.done(status, seconds);
  }

  /** dpp_idempotency_outcomes_total{outcome}. */
  idempotency(outcome: IdempotencyOutcome): void {
    let child = this.idempotencyChildren[outcome];
    if (!child) {
      const c = this.counter(
        "dpp_idempotency_outcomes_total",
        "Keyed calls by outcome: new (ran), replayed (answered from the record), busy (key held), conflict",
        ["outcome"],
      );
      child = this.idempotencyChildren[outcome] = c.labels({ outcome });
    }
    child.inc();
  }

  private readonly idempotencyChildren: Partial<Record<IdempotencyOutcome, Inc>> = {};

  /** dpp_rate_limit_refusals_total{limit}: a request refused 429 by the named limit. */
  rateLimitRefusal(limit: string): void {
    const c = this.counter(
      "dpp_rate_limit_refusals_total",
      "Requests refused 429 by a rate limit, by limit",
      ["limit"],
    );
    this.child("rate_limit", c, limit, { limit }).inc();
  }

  /** The series of a leader job (jobs.ts reports each pass through it). */
  leaderJob(job: string): { pass(result: LeaderJobResult): void; leader(held: boolean): void } {
    const runs = this.counter(
      "dpp_leader_job_runs_total",
      "Passes of a periodic job: ok, error, or skipped (another replica held its lock)",
      ["job", "result"],
    );
    const lastSuccess = this.gauge(
      "dpp_leader_job_last_success_timestamp_seconds",
      "Unix time of the job's last successful pass in this process",
      ["job"],
    );
    const leader = this.gauge(
      "dpp_leader_job_leader",
      "1 while this process holds the job's lock (ran its last pass), 0 when another replica does",
      ["job"],
    );
    const byResult: Partial<Record<LeaderJobResult, Inc>> = {};
    const leaderChild = leader.labels({ job });
    leaderChild.set(0);
    const lastChild = lastSuccess.labels({ job });
    return {
      pass: (result) => {
        (byResult[result] ??= runs.labels({ job, result })).inc();
        if (result === "ok") lastChild.set(Date.now() / 1000);
      },
      leader: (held) => leaderChild.set(held ? 1 : 0),
    };
  }

  /** A gauge set by its owner (made once per name). */
  gauge(name: string, help: string, labelNames: string[]): Gauge<string> {
    const found = this.registry.getSingleMetric(name);
    if (found) return found as Gauge<string>;
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }

  /**
   * A gauge computed when Prometheus scrapes: `read` answers every label set's value (a query, a pool's counts).
   * A read that fails leaves the gauge's series out of that scrape (logged at debug): a scrape never fails for it.
   * Several reads may share one gauge (each owns its label sets).
   */
  onScrape(name: string, help: string, labelNames: string[], read: () => Promise<Sample[]> | Sample[]): void {
    let gauge = this.registry.getSingleMetric(name) as Gauge<string> | undefined;
    if (!gauge) {
      const scrapes = this.scrapes;
      const log = this.log;
      gauge = new Gauge({
        name,
        help,
        labelNames,
        registers: [this.registry],
        async collect() {
          this.reset();
          await Promise.all(
            scrapes
              .filter((s) => s.gauge === this)
              .map(async (s) => {
                try {
                  for (const sample of await s.read()) this.set(sample.labels ?? {}, sample.value);
                } catch (err) {
                  log?.debug({ err: { message: (err as Error).message }, metric: name }, "metric not read");
                }
              }),
          );
        },
      });
    }
    this.scrapes.push({ gauge, read });
  }

  /**
   * A queue of the service's own work (import rows, webhook retries): dpp_queue_backlog{queue} and
   * dpp_queue_oldest_age_seconds{queue}, both from one `read` per scrape.
   */
  queue(queue: string, read: () => Promise<{ backlog: number; oldestAgeSeconds: number }>): void {
    let pending: Promise<{ backlog: number; oldestAgeSeconds: number }> | undefined;
    const once = () => (pending ??= read().finally(() => setImmediate(() => (pending = undefined))));
    this.onScrape(
      "dpp_queue_backlog",
      "Items waiting in a queue of the service's own work",
      ["queue"],
      async () => [{ labels: { queue }, value: (await once()).backlog }],
    );
    this.onScrape(
      "dpp_queue_oldest_age_seconds",
      "Age of the oldest item waiting in a queue of the service's own work (0 when none)",
      ["queue"],
      async () => [{ labels: { queue }, value: Math.max(0, (await once()).oldestAgeSeconds) }],
    );
  }

  /** The exposition text of every series. */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}

/** The metrics of the service whose pool each database is (set by the service template). */
const ofDatabase = new WeakMap<object, ServiceMetrics>();

/** Records that `db` (a service's pool) belongs to the service of `metrics`: kit code given only the pool finds them. */
export function setDatabaseMetrics(db: object, metrics: ServiceMetrics): void {
  ofDatabase.set(db, metrics);
}

/** The metrics of the service whose pool `db` is; undefined outside a service (tests of the kit's parts). */
export function databaseMetrics(db: object): ServiceMetrics | undefined {
  return ofDatabase.get(db);
}

export interface MetricsServer {
  /** The bound port. */
  port: number;
  close(): Promise<void>;
}

/**
 * Serves `metrics` at GET /metrics (and nothing else) on host:port; port 0 takes a free one. A scrape is
 * answered 500 with the error's message when a series cannot be rendered.
 */
export function serveMetrics(
  metrics: ServiceMetrics,
  host: string,
  port: number,
  log?: Logger,
): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { Allow: "GET, HEAD" }).end();
      return;
    }
    if (path !== "/metrics") {
      res.writeHead(404, { "Content-Type": "text/plain" }).end("metrics are at /metrics\n");
      return;
    }
    metrics.text().then(
      (body) => res.writeHead(200, { "Content-Type": metrics.registry.contentType }).end(body),
      (err: unknown) => {
        log?.warn({ err: { message: (err as Error).message } }, "metrics scrape failed");
        res.writeHead(500, { "Content-Type": "text/plain" }).end(String((err as Error).message));
      },
    );
  });
  // A scrape's connection never holds a shutdown.
  server.keepAliveTimeout = 5_000;
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const bound = (server.address() as AddressInfo).port;
      log?.info({ host, port: bound }, "metrics served at /metrics");
      resolve({
        port: bound,
        close: () =>
          new Promise<void>((r) => {
            server.close(() => r());
            server.closeAllConnections();
          }),
      });
    });
  });
}
