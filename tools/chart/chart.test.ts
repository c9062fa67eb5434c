/**
 * Checks of the Helm chart in charts/dpp that Helm itself does not make (tools/chart/helm.test.ts runs the pinned
 * helm: `helm lint --strict`, `helm template`, the rendered manifests against the Kubernetes API schemas, the
 * golden renders):
 * - Chart.yaml and values.yaml parse (the `yaml` package) and say what they must;
 * - values.yaml is valid against values.schema.json (ajv, draft-07), and the
 *   schema rejects what it must (unknown keys, unknown components, bad types);
 * - every `.Values.x.y` path a template reads exists in values.yaml (helm renders a missing one as empty);
 * - every service of the registry (services.json) has an enabled component of
 *   its kind and port, whose <NAME>_ADDR is the registry's, and every enabled
 *   component is a registered service;
 * - internal authentication and the NetworkPolicies are wired as designed;
 * - README.md documents every value.
 */
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import Ajv from "ajv";
import { addrEnvOf, loadRegistry } from "../registry";

const repoRoot = path.resolve(__dirname, "..", "..");
const chartDir = path.join(repoRoot, "charts", "dpp");
const read = (...p: string[]) => fs.readFileSync(path.join(chartDir, ...p), "utf8");

type Values = Record<string, any>;
const values: Values = YAML.parse(read("values.yaml"));
const schema = JSON.parse(read("values.schema.json"));

function validator() {
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
  return ajv.compile(schema);
}

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

/**
 * The components as the chart renders them (templates/_helpers.tpl, "dpp.components"): each registered service's
 * defaults from registry.generated.yaml with every key values.yaml sets replacing its default, and the blocks
 * of values.yaml for services not registered yet.
 */
function renderedComponents(v: Values = values): Record<string, Values> {
  const defaults: Record<string, Values> = YAML.parse(read("registry.generated.yaml")).components;
  const out: Record<string, Values> = clone(v.components);
  for (const [name, d] of Object.entries(defaults)) out[name] = { ...clone(d), ...(out[name] ?? {}) };
  return out;
}

describe("Chart.yaml", () => {
  const chart = YAML.parse(read("Chart.yaml"));

  test("is a v2 application chart named dpp, version 0.1.0", () => {
    expect(chart).toMatchObject({ apiVersion: "v2", name: "dpp", type: "application", version: "0.1.0" });
    expect(String(chart.appVersion)).toBe("0.1.0");
  });
});

describe("values.yaml against values.schema.json", () => {
  const validate = validator();

  test("the schema is draft-07 and closed at the top level", () => {
    expect(schema.$schema).toBe("http://json-schema.org/draft-07/schema#");
    expect(schema.additionalProperties).toBe(false);
  });

  test("values.yaml is valid", () => {
    const ok = validate(values);
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
  });

  test("every top-level key of values.yaml is described by the schema, and the reverse", () => {
    const described = Object.keys(schema.properties).filter((k) => k !== "global");
    expect(Object.keys(values).sort()).toEqual(described.sort());
  });

  const rejected: Array<[string, (v: Values) => void]> = [
    ["an unknown top-level key", (v) => (v.replicaCount = 3)],
    ["an unknown component", (v) => (v.components.billing = clone(v.components.passport))],
    ["an unknown key inside a component", (v) => (v.components.passport.replica = 2)],
    ["replicas of the wrong type", (v) => (v.components.gateway.replicas = "two")],
    ["an unknown component kind", (v) => (v.components.events.kind = "tcp")],
    ["a port out of range", (v) => (v.components.events.port = 70000)],
    ["a component without its database secret", (v) => delete v.components.passport.databaseSecret],
    ["a database secret without a key", (v) => delete v.components.passport.databaseSecret.key],
    ["a malformed Kafka broker", (v) => (v.bus.kafka.brokers = ["kafka"])],
    ["a Kafka topic name the broker refuses", (v) => (v.bus.kafka.topic = "dpp events")],
    ["an empty Kafka consumer group", (v) => (v.bus.kafka.consumerGroup = "")],
    ["a Kafka session timeout below the brokers' minimum", (v) => (v.bus.kafka.sessionTimeoutMs = 1000)],
    ["a Kafka replication factor of 0", (v) => (v.bus.kafka.replicationFactor = 0)],
    ["an unknown log level", (v) => (v.config.logLevel = "verbose")],
    ["a caller name that is not a component name", (v) => (v.components.passport.callers = ["Gateway"])],
    ["a public key that is not base64url Ed25519", (v) => (v.internalAuth.publicKeys.gateway = ["abc"])],
    ["a private key that is not base64url Ed25519", (v) => (v.internalAuth.privateKeys.gateway = "secret")],
    ["an unknown key under internalAuth", (v) => (v.internalAuth.trustedKeys = {})],
    ["no networkPolicy switch", (v) => delete v.networkPolicy.enabled],
    ["a scrape interval that is not a duration", (v) => (v.metrics.serviceMonitor.interval = "30")],
    ["an unknown key under metrics", (v) => (v.metrics.scrape = true)],
    ["a metrics port out of range", (v) => (v.metrics.port = 0)],
    ["a gRPC connection age below a second", (v) => (v.config.grpcMaxConnectionAgeMs = 10)],
  ];
  test.each(rejected)("rejects %s", (_what, mutate) => {
    const v = clone(values);
    mutate(v);
    expect(validate(v)).toBe(false);
  });

  test("accepts Helm's `global` key and the optional per-component overrides", () => {
    const v = clone(values);
    v.global = { imageRegistry: "r.example.com" };
    Object.assign(v.components.passport, {
      autoscaling: { enabled: true, maxReplicas: 10, targetMemoryUtilizationPercentage: 80 },
      podDisruptionBudget: { minAvailable: 1 },
      nodeSelector: { pool: "general" },
      tolerations: [{ key: "dedicated", operator: "Exists" }],
      terminationGracePeriodSeconds: 45,
    });
    v.bus.kafka.brokers = ["kafka-0.kafka:9092", "kafka-1.kafka:9092"];
    const key = "MT-JM1WzIlozVOvfH59tAp4_xw7wddSRgO1bmwTmcfQ";
    v.internalAuth.privateKeys.gateway = key;
    v.internalAuth.publicKeys = { gateway: [key, key.replace("M", "N")], admin: [key] };
    v.networkPolicy.extraFrom = [{ podSelector: { matchLabels: { "app.kubernetes.io/name": "dpp-admin" } } }];
    const ok = validate(v);
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
  });
});

describe("components", () => {
  const components = renderedComponents();

  const registry = loadRegistry();

  test("every registered service has a component of its kind and port, migrating when it owns a schema", () => {
    const seen = registry.map((s) => {
      const c = components[s.name];
      return c && { name: s.name, kind: c.kind, port: c.port, migrate: c.migrate };
    });
    expect(seen).toEqual(
      registry.map((s) => ({
        name: s.name,
        kind: s.kind === "gateway" ? "http" : "grpc",
        port: s.port,
        migrate: s.schema !== null,
      })),
    );
  });

  test("the enabled components are exactly the registered services; the others are switched off", () => {
    const enabled = Object.keys(components).filter((n) => components[n].enabled);
    expect(enabled.sort()).toEqual(registry.map((s) => s.name).sort());
    // Planned services wait here, switched off, until their folder and registry entry exist.
    for (const n of ["variants-units", "documents", "imports", "filings"])
      if (!registry.some((s) => s.name === n)) expect(components[n]?.enabled).toBe(false);
  });

  test("each registered service's callers in the chart (its trusted keys and NetworkPolicy) are the registry's, plus the admin CLI", () => {
    for (const s of registry) {
      const chartCallers: string[] = components[s.name]?.callers ?? [];
      expect([s.name, chartCallers.filter((c) => c !== "admin").sort()]).toEqual([
        s.name,
        [...s.callers].sort(),
      ]);
    }
  });

  test("the chart announces each gRPC component under the registry's <NAME>_ADDR", () => {
    const helpers = read("templates", "_helpers.tpl");
    const configmap = read("templates", "configmap.yaml");
    // The chart derives the variable from the component name: upper case, "-" as "_", then _ADDR ...
    expect(helpers).toContain(`{{- printf "%s_ADDR" (. | upper | replace "-" "_") -}}`);
    // ... and announces it for every enabled gRPC component, in the ConfigMap every pod loads, as its headless
    // Service (the rendered values: tools/chart/helm.test.ts).
    expect(configmap).toMatch(
      /if and \$c\.enabled \(eq \$c\.kind "grpc"\)[\s\S]*include "dpp\.addrVar" \$name \}\}: \{\{ include "dpp\.addr" /,
    );
    expect(helpers).toContain('printf "dns:///%s:%v" (include "dpp.headlessName" .) .c.port');
    for (const s of registry.filter((e) => e.kind === "grpc")) expect(addrEnvOf(s.name)).toBe(s.addrEnv);
  });

  test("every component runs services/<name>/dist/main.js, the bundle of its registered folder", () => {
    const deployment = read("templates", "deployment.yaml");
    expect(deployment).toContain(`args: [{{ printf "services/%s/dist/main.js" $name | quote }}, "serve"]`);
    for (const s of registry) expect(s.folder).toBe(`services/${s.name}`);
  });

  test("the gateway is the one http component, on a port no other component uses", () => {
    expect(Object.keys(components).filter((n) => components[n].kind === "http")).toEqual(["gateway"]);
    const ports = Object.values(components).map((c) => c.port);
    expect(new Set(ports).size).toBe(ports.length);
  });

  test("every template reads the components through dpp.components (the registry's defaults under values.yaml)", () => {
    const templates = path.join(chartDir, "templates");
    const direct = fs
      .readdirSync(templates)
      .filter((f) => /\.Values\.components\b/.test(fs.readFileSync(path.join(templates, f), "utf8")))
      .map((f) => f);
    // The helper itself is the one reader of .Values.components.
    expect(direct).toEqual(["_helpers.tpl"]);
    const helpers = read("templates", "_helpers.tpl");
    expect(helpers.match(/\.Values\.components\b/g)).toHaveLength(1);
    expect(helpers).toContain('.Files.Get "registry.generated.yaml" | fromYaml');
  });

  test("each component has its own database secret (its own Postgres role)", () => {
    const names = Object.values(components).map((c) => c.databaseSecret.name);
    expect(names.every((n) => typeof n === "string" && n.length > 0)).toBe(true);
    expect(new Set(names).size).toBe(names.length);
  });
});

describe("templates", () => {
  const templatesDir = path.join(chartDir, "templates");
  const files = fs.readdirSync(templatesDir).sort();
  const expected = [
    "NOTES.txt",
    "_helpers.tpl",
    "configmap.yaml",
    "deployment.yaml",
    "hpa.yaml",
    "grafana-dashboard.yaml",
    "ingress.yaml",
    "internal-auth-secret.yaml",
    "migrations-job.yaml",
    "networkpolicy.yaml",
    "pdb.yaml",
    "prometheusrule.yaml",
    "service.yaml",
    "serviceaccount.yaml",
    "servicemonitor.yaml",
  ];

  test("the expected template files exist", () => {
    expect(files).toEqual(expect.arrayContaining(expected));
  });

  test("every .Values path a template reads exists in values.yaml", () => {
    const missing: string[] = [];
    for (const file of files) {
      const text = fs.readFileSync(path.join(templatesDir, file), "utf8");
      for (const m of text.matchAll(/\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)/g)) {
        const keys = m[1].slice(1).split(".");
        let node: unknown = values;
        for (const k of keys) {
          if (node === null || typeof node !== "object" || !(k in (node as object))) {
            missing.push(`${file}: .Values.${keys.join(".")}`);
            break;
          }
          node = (node as Record<string, unknown>)[k];
        }
      }
    }
    expect(missing).toEqual([]);
  });

  test("the migrations Job is a pre-install and pre-upgrade hook that runs `migrate`", () => {
    const job = fs.readFileSync(path.join(templatesDir, "migrations-job.yaml"), "utf8");
    expect(job).toContain("helm.sh/hook: pre-install,pre-upgrade");
    expect(job).toMatch(/dist\/main\.js" \$name \| quote \}\}, "migrate"\]/);
  });

  test("gRPC components get native gRPC probes, http ones /healthz and /readyz", () => {
    const dep = fs.readFileSync(path.join(templatesDir, "deployment.yaml"), "utf8");
    expect(dep.match(/grpc:\n\s+port: \{\{ \$c\.port \}\}/g)?.length).toBe(3);
    expect(dep).toContain("path: /healthz");
    expect(dep).toContain("path: /readyz");
  });
});

describe("internal authentication and network policies", () => {
  const components = renderedComponents();
  const template = (file: string) => fs.readFileSync(path.join(chartDir, "templates", file), "utf8");
  const helpers = template("_helpers.tpl");

  test("every gRPC component the gateway fronts is called by the gateway, and the gateway by nobody", () => {
    const fronted = new Set<string>(
      loadRegistry()
        .filter((s) => s.gatewayModule !== null)
        .map((s) => s.name),
    );
    for (const [name, c] of Object.entries(components)) {
      if (c.kind === "grpc" && fronted.has(name))
        expect([name, c.callers]).toEqual([name, expect.arrayContaining(["gateway"])]);
    }
    // The public surface answers the public on its httpPort; its gRPC port only takes the admin CLI.
    expect(components["public-surface"].callers).toEqual(["admin"]);
    expect(components.gateway.callers).toEqual([]);
    expect(components.passport.callers).toContain("admin");
  });

  test("the public surface's httpPort is its listener's port, a Service port, open in its policy and behind publicIngress", () => {
    const ps = components["public-surface"];
    expect(ps.httpPort).toEqual(expect.any(Number));
    expect(ps.env.PUBLIC_SURFACE_HTTP_PORT).toBe(String(ps.httpPort));
    expect(ps.env.PUBLIC_SURFACE_HTTP_HOST).toBe("0.0.0.0");
    expect(template("deployment.yaml")).toMatch(
      /with \$c\.httpPort \}\}\s+- name: http\s+containerPort: \{\{ \. \}\}/,
    );
    expect(template("service.yaml")).toMatch(
      /with \$c\.httpPort \}\}\s+- name: http\s+port: \{\{ \. \}\}\s+targetPort: http/,
    );
    expect(template("networkpolicy.yaml")).toMatch(
      /with \$c\.httpPort \}\}\s+- ports:\s+- port: \{\{ \. \}\}/,
    );
    const ingress = template("ingress-public.yaml");
    expect(ingress).toContain('"public-surface"');
    expect(ingress).toMatch(/port:\s+name: http/);
    expect(values.publicIngress.hosts.map((h: { host: string }) => h.host)).toEqual([
      "passports.example.com",
      "id.example.com",
    ]);
    expect(template("configmap.yaml")).toContain("RESOLVER_BASE_URL: {{ . | quote }}");
  });

  test("every caller named by a component is a component or has a place for its public keys", () => {
    const callers = new Set(Object.values(components).flatMap((c) => c.callers ?? []));
    for (const caller of callers) {
      expect([caller, caller in values.internalAuth.publicKeys]).toEqual([caller, true]);
    }
    for (const caller of Object.keys(values.internalAuth.privateKeys))
      expect(components[caller]).toBeDefined();
  });

  test("no key is shipped in values.yaml", () => {
    expect(Object.values(values.internalAuth.privateKeys).filter((k) => k !== "")).toEqual([]);
    expect(Object.values(values.internalAuth.publicKeys).flat()).toEqual([]);
  });

  test("gRPC components get their trusted keys, calling components their private key from the Secret", () => {
    const serveEnv = helpers.slice(helpers.indexOf('define "dpp.serveEnv"'));
    expect(serveEnv).toMatch(
      /if eq \.c\.kind "grpc" \}\}\n- name: INTERNAL_AUTH_TRUSTED_KEYS\n {2}value: \{\{ include "dpp\.trustedKeys" \. \| quote \}\}/,
    );
    expect(serveEnv).toMatch(
      /if include "dpp\.isCaller" \. \}\}\n- name: INTERNAL_AUTH_PRIVATE_KEY\n {2}valueFrom:\n {4}secretKeyRef:\n {6}name: \{\{ include "dpp\.internalAuthSecretName" \$root \| quote \}\}\n {6}key: \{\{ \.name \| quote \}\}/,
    );
    // A component of the chart named as a caller without a key, or a component trusting nobody, fails the render.
    expect(helpers).toMatch(/fail \(printf "components\.%s\.callers names %s, but internalAuth\.publicKeys/);
    expect(helpers).toMatch(/fail \(printf "components\.%s trusts no caller/);
  });

  test("the Secret is made only without existingSecret, and requires each caller's private key", () => {
    const secret = template("internal-auth-secret.yaml");
    expect(secret).toContain("{{- if not .Values.internalAuth.existingSecret }}");
    expect(secret).toContain("kind: Secret");
    expect(secret).toMatch(/required \(printf "internalAuth\.privateKeys\.%s is required/);
    expect(secret).toContain("| b64enc | quote }}");
    expect(helpers).toMatch(
      /default \(printf "%s-internal-auth" .*\) \.Values\.internalAuth\.existingSecret/,
    );
  });

  test("each gRPC component's NetworkPolicy admits only its callers' pods and extraFrom on its gRPC port, never everyone", () => {
    const np = template("networkpolicy.yaml");
    expect(np).toContain("{{- if .Values.networkPolicy.enabled }}");
    expect(np).toContain('{{- if and $c.enabled (eq $c.kind "grpc") }}');
    expect(np).toContain("kind: NetworkPolicy");
    expect(np).toMatch(/policyTypes:\n\s+- Ingress/);
    expect(np).toMatch(/range \$caller := \(\$c\.callers \| default list\)/);
    expect(np).toContain('(dict "podSelector" (dict "matchLabels" $labels))');
    expect(np).toContain("concat $peers ($.Values.networkPolicy.extraFrom | default list)");
    expect(np).toMatch(/ports:\n\s+- port: \{\{ \$c\.port \}\}\n\s+protocol: TCP/);
    // An ingress rule without `from` would admit every source: the callers' rule always has one, and with no
    // peer (and no public httpPort, no metrics port) the policy admits none. Only a public httpPort, and the
    // metrics port while metrics.from is empty, are open to everyone (the rendered rules: tools/chart/helm.test.ts).
    expect(np).toMatch(
      /\{\{- if or \$peers \$c\.httpPort \$metrics\.enabled \}\}\n {2}ingress:\n {4}\{\{- if \$peers \}\}\n {4}- from:/,
    );
    expect(np).toMatch(/\{\{- with \$c\.httpPort \}\}\n {4}- ports:\n {8}- port: \{\{ \. \}\}/);
    expect(np).toMatch(/\{\{- else \}\}\n {2}ingress: \[\]/);
  });
});

describe("Kafka settings", () => {
  const configmap = read("templates", "configmap.yaml");
  const kafka: Values = values.bus.kafka;

  test("the defaults are those of one deployment: the kit's defaults, broker's replication factor", () => {
    expect(kafka).toMatchObject({
      topic: "dpp.domain-events.v1",
      consumerGroup: "events",
      topicPartitions: 6,
      replicationFactor: null,
      createTopic: true,
      sessionTimeoutMs: 10000,
      rebalanceTimeoutMs: 30000,
    });
  });

  test.each([
    ["topic", "KAFKA_TOPIC"],
    ["consumerGroup", "KAFKA_CONSUMER_GROUP"],
    ["topicPartitions", "KAFKA_TOPIC_PARTITIONS"],
    ["replicationFactor", "KAFKA_TOPIC_REPLICATION_FACTOR"],
    ["createTopic", "KAFKA_TOPIC_CREATE"],
    ["sessionTimeoutMs", "KAFKA_SESSION_TIMEOUT_MS"],
    ["rebalanceTimeoutMs", "KAFKA_REBALANCE_TIMEOUT_MS"],
  ])("bus.kafka.%s is rendered as %s in the shared ConfigMap, inside the Kafka block", (key, variable) => {
    const block = configmap.slice(
      configmap.indexOf("{{- if .brokers }}"),
      configmap.indexOf("{{- if .Values.otel"),
    );
    expect(block).toMatch(new RegExp(`${variable}: \\{\\{ \\.${key} \\|`));
  });

  test("the replication factor is rendered only when set (unset: the broker's default)", () => {
    expect(configmap).toMatch(/\{\{- if \.replicationFactor \}\}\s*KAFKA_TOPIC_REPLICATION_FACTOR/);
  });

  test("values.yaml and the README say that two deployments on one cluster need distinct names", () => {
    expect(read("values.yaml")).toMatch(
      /Two deployments sharing one Kafka cluster need distinct kafka.topic and kafka.consumerGroup/,
    );
    expect(read("README.md")).toMatch(/Two deployments on one cluster need distinct groups/);
  });
});

describe("README.md", () => {
  const readme = read("README.md");

  /** Leaf paths of values.yaml; components are documented once, as components.<name>.<field>. */
  function leafPaths(node: unknown, prefix: string): string[] {
    if (prefix === "components") {
      const fields = new Set<string>();
      for (const c of Object.values(node as Record<string, Values>))
        Object.keys(c).forEach((f) => fields.add(f));
      return [...fields].map((f) => `components.<name>.${f}`);
    }
    if (node === null || typeof node !== "object" || Array.isArray(node) || Object.keys(node).length === 0) {
      return [prefix];
    }
    return Object.entries(node as Record<string, unknown>).flatMap(([k, v]) =>
      leafPaths(v, prefix ? `${prefix}.${k}` : k),
    );
  }

  /** Documented: the path itself, or an ancestor below the top level (it covers its children), in backticks. */
  function documented(p: string): boolean {
    const parts = p.split(".");
    for (let i = parts.length; i >= Math.min(2, parts.length); i--) {
      if (readme.includes("`" + parts.slice(0, i).join(".") + "`")) return true;
    }
    return false;
  }

  test("documents every value", () => {
    expect(leafPaths(values, "").filter((p) => !documented(p))).toEqual([]);
  });

  test("says how to make the internal keys and what the NetworkPolicies are for", () => {
    expect(readme).toContain("internal-auth-keygen.ts");
    expect(readme).toMatch(/defence in depth/i);
  });

  test("says how the chart is checked with the pinned helm and how to update the golden renders", () => {
    expect(readme).toContain("node tools/chart/helm.mjs");
    expect(readme).toContain("npm run chart:golden");
  });
});
