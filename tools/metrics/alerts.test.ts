/**
 * The alerting rules (deploy/prometheus/alerts.yaml), their runbooks (docs/runbooks/), the dashboard
 * (deploy/grafana/dpp-dashboard.json) and the list of series (docs/metrics.md) agree:
 * - the rules file parses as Prometheus' rules format, every rule an alert with a duration, a severity, a summary,
 *   a description and a runbook_url naming a runbook that exists, and every runbook belongs to an alert;
 * - every PromQL expression (alerts and dashboard panels) parses with Prometheus' own PromQL grammar
 *   (@prometheus-io/lezer-promql) and reads only series docs/metrics.md lists;
 * - docs/metrics.md lists exactly the dpp_ series the services' code names.
 * promtool (Debian's `prometheus` package) is not installed by this repository's tools; where it exists,
 * `promtool check rules deploy/prometheus/alerts.yaml` checks the file as Prometheus loads it.
 */
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
// The grammar's package is an ES module with a CommonJS build, which jest loads (its `require` export).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { parser } = require("@prometheus-io/lezer-promql") as typeof import("@prometheus-io/lezer-promql", {
  with: { "resolution-mode": "require" },
});

const repoRoot = path.resolve(__dirname, "..", "..");
const read = (...p: string[]) => fs.readFileSync(path.join(repoRoot, ...p), "utf8");

/** docs/metrics.md's series: name → type, from its tables' first two columns. */
function listedSeries(): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of read("docs", "metrics.md").split("\n")) {
    const m = /^\|\s*`([a-z_:][a-z0-9_:]*)`\s*\|\s*(counter|gauge|histogram)\s*\|/.exec(line);
    if (m) out.set(m[1]!, m[2]!);
  }
  return out;
}

/** The names an expression may read: the listed series, and a histogram's _bucket, _sum and _count. */
function readableNames(series: Map<string, string>): Set<string> {
  const names = new Set<string>();
  for (const [name, type] of series) {
    if (type === "histogram") for (const s of ["_bucket", "_sum", "_count"]) names.add(name + s);
    else names.add(name);
  }
  return names;
}

/** The metric names an expression selects, or the offset of its first syntax error. */
function selectedNames(expr: string): { names: string[]; errorAt?: number } {
  const names: string[] = [];
  const cursor = parser.parse(expr).cursor();
  let errorAt: number | undefined;
  do {
    if (cursor.type.isError) errorAt ??= cursor.from;
    if (cursor.type.name === "VectorSelector") {
      const selector = cursor.node.getChild("Identifier");
      if (selector) names.push(expr.slice(selector.from, selector.to));
    }
  } while (cursor.next());
  return { names, errorAt };
}

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

const rules: Rule[] = (
  YAML.parse(read("deploy", "prometheus", "alerts.yaml")) as {
    groups: Array<{ name: string; rules: Rule[] }>;
  }
).groups.flatMap((g) => g.rules);
const series = listedSeries();
const readable = readableNames(series);

test("docs/metrics.md lists the series, each with its type", () => {
  expect(series.size).toBeGreaterThan(40);
  for (const name of [
    "dpp_http_requests_total",
    "dpp_http_request_duration_seconds",
    "dpp_grpc_server_handled_total",
    "dpp_grpc_server_handling_seconds",
    "dpp_grpc_client_handled_total",
    "dpp_pg_pool_connections",
    "dpp_pg_pool_max",
    "dpp_outbox_backlog",
    "dpp_outbox_oldest_unsent_age_seconds",
    "dpp_consumer_lag",
    "dpp_idempotency_outcomes_total",
    "dpp_rate_limit_refusals_total",
    "dpp_leader_job_runs_total",
    "dpp_leader_job_last_success_timestamp_seconds",
    "dpp_leader_job_leader",
  ])
    expect(series.has(name)).toBe(true);
});

test("docs/metrics.md lists exactly the dpp_ series the services' code makes (each name a call's first argument)", () => {
  const inCode = new Set<string>();
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== "node_modules" && e.name !== "test") walk(p);
      } else if (e.name.endsWith(".ts") && !e.name.endsWith(".test.ts"))
        for (const m of fs.readFileSync(p, "utf8").matchAll(/\(\s*"(dpp_[a-z0-9_]+)",/g)) inCode.add(m[1]!);
    }
  };
  walk(path.join(repoRoot, "services"));
  const listed = [...series.keys()].filter((n) => n.startsWith("dpp_")).sort();
  expect([...inCode].sort()).toEqual(listed);
});

test("every rule is an alert with a duration, a severity, a summary, a description and a runbook", () => {
  expect(rules.length).toBeGreaterThanOrEqual(10);
  const names = new Set<string>();
  for (const r of rules) {
    expect(r.alert).toMatch(/^Dpp[A-Za-z0-9]+$/);
    expect(names.has(r.alert!)).toBe(false);
    names.add(r.alert!);
    expect(r.for).toMatch(/^\d+[smh]$/);
    expect(["page", "warning", "info"]).toContain(r.labels?.severity);
    expect(r.annotations?.summary).toBeTruthy();
    expect(r.annotations?.description).toBeTruthy();
    expect(r.annotations?.runbook_url).toMatch(/^docs\/runbooks\/[a-z0-9-]+\.md$/);
  }
});

test("every alert's runbook exists and says what it means, how to check and what to do; every runbook has its alert", () => {
  const used = new Set<string>();
  for (const r of rules) {
    const file = r.annotations!.runbook_url!;
    used.add(path.basename(file));
    expect(fs.existsSync(path.join(repoRoot, file))).toBe(true);
    const text = read(file);
    expect(text).toContain(`# ${r.alert}`);
    for (const heading of ["## What it means", "## How to check", "## What to do"])
      expect(text).toContain(heading);
  }
  const pages = fs.readdirSync(path.join(repoRoot, "docs", "runbooks")).filter((f) => f.endsWith(".md"));
  expect(pages.filter((f) => f !== "README.md").sort()).toEqual([...used].sort());
});

test("every alert's expression parses as PromQL and reads only series docs/metrics.md lists", () => {
  for (const r of rules) {
    const { names, errorAt } = selectedNames(r.expr);
    expect({ alert: r.alert, errorAt }).toEqual({ alert: r.alert, errorAt: undefined });
    expect(names.length).toBeGreaterThan(0);
    for (const name of names)
      expect({ alert: r.alert, name, listed: readable.has(name) }).toMatchObject({ listed: true });
  }
});

test("the alerts cover errors, latency, the pipelines' backlogs, the pool, jobs, rate limits and keyed calls", () => {
  const reads = (name: string) =>
    rules.filter((r) => selectedNames(r.expr).names.some((n) => n.startsWith(name)));
  for (const name of [
    "dpp_http_requests_total",
    "dpp_grpc_server_handled_total",
    "dpp_http_request_duration_seconds",
    "dpp_grpc_server_handling_seconds",
    "dpp_outbox_backlog",
    "dpp_outbox_oldest_unsent_age_seconds",
    "dpp_consumer_lag",
    "dpp_pg_pool_connections",
    "dpp_leader_job_runs_total",
    "dpp_leader_job_last_success_timestamp_seconds",
    "dpp_rate_limit_refusals_total",
    "dpp_idempotency_outcomes_total",
    "dpp_queue_oldest_age_seconds",
  ])
    expect({ name, alerts: reads(name).length > 0 }).toEqual({ name, alerts: true });
  const queues = rules.map((r) => r.expr).join("\n");
  expect(queues).toContain('queue="import_rows"');
  expect(queues).toContain('queue="webhook_retries"');
});

test("the dashboard's panels read only listed series, each through valid PromQL", () => {
  const dashboard = JSON.parse(read("deploy", "grafana", "dpp-dashboard.json")) as {
    title: string;
    uid: string;
    panels: Array<{ title: string; type: string; targets?: Array<{ expr: string }> }>;
    templating: { list: Array<{ name: string; query?: unknown }> };
  };
  expect(dashboard.uid).toBeTruthy();
  const exprs = dashboard.panels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })),
  );
  expect(exprs.length).toBeGreaterThan(15);
  const seen = new Set<string>();
  for (const { panel, expr } of exprs) {
    // Grafana's variables and interval, as a value PromQL accepts, before parsing.
    const promql = expr.replace(/\$__rate_interval|\$__interval/g, "5m").replace(/\$\{?(\w+)\}?/g, "x");
    const { names, errorAt } = selectedNames(promql);
    expect({ panel, expr, errorAt }).toEqual({ panel, expr, errorAt: undefined });
    for (const name of names) {
      expect({ panel, name, listed: readable.has(name) }).toMatchObject({ listed: true });
      seen.add(name.replace(/_(bucket|sum|count)$/, ""));
    }
  }
  // Every dpp_ series has a panel.
  for (const name of series.keys())
    if (name.startsWith("dpp_")) expect({ name, shown: seen.has(name) }).toEqual({ name, shown: true });
});
