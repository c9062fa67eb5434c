/**
 * The Helm chart in charts/dpp through Helm itself (docs/decisions/0064-chart-validation.md): the pinned Helm
 * binary (tools/chart/helm.mjs, fetched by this project's globalSetup) lints the chart strictly and renders it
 * with two value sets, the defaults and charts/dpp/examples/production.yaml (each with the test key pairs of
 * tools/chart/values/test-keys.yaml: the chart refuses to render without keys). Every rendered manifest is
 * validated against the Kubernetes API schemas of the oldest and the newest Kubernetes version the chart
 * supports (Chart.yaml kubeVersion), the Prometheus Operator's resources against their CRD schemas
 * (tools/chart/validate-manifests.mjs). The renders are kept in tools/chart/golden/ so that a change to what the
 * chart makes shows in review; `npm run chart:golden` writes them anew.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import YAML from "yaml";

const repoRoot = path.resolve(__dirname, "..", "..");
const chartDir = path.join(repoRoot, "charts", "dpp");
const helm = process.env.DPP_HELM ?? path.join(repoRoot, ".dpp", "tools", "helm-3.17.3", "helm");
const testKeys = path.join(__dirname, "values", "test-keys.yaml");
const goldenDir = path.join(__dirname, "golden");
const updateGolden = process.env.DPP_CHART_GOLDEN === "update";

/** The oldest and the newest Kubernetes version the chart supports, as Chart.yaml and README.md declare them. */
const OLDEST = "1.27";
const NEWEST = "1.36";

type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels: Record<string, string>; annotations?: Record<string, string> };
  [k: string]: any;
};

function run(args: string[], opts: { cwd?: string } = {}) {
  const r = spawnSync(helm, args, {
    cwd: opts.cwd ?? repoRoot,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const renders = new Map<string, string>();

/**
 * `helm template dpp charts/dpp` with the given values files (and flags), once per argument list; fails the test
 * with helm's stderr.
 */
function template(args: string[]): string {
  const key = JSON.stringify(args);
  const cached = renders.get(key);
  if (cached !== undefined) return cached;
  const r = run(["template", "dpp", "charts/dpp", ...args]);
  if (r.status !== 0)
    throw new Error(`helm template ${args.join(" ")} failed (exit ${r.status}):\n${r.stderr}`);
  renders.set(key, r.stdout);
  return r.stdout;
}

function manifestsOf(text: string): Manifest[] {
  return YAML.parseAllDocuments(text)
    .map((d) => d.toJSON() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
}

const VALUE_SETS: Record<string, string[]> = {
  default: ["-f", testKeys],
  production: ["-f", "charts/dpp/examples/production.yaml", "-f", testKeys],
};

describe("helm", () => {
  test("is the pinned Helm 3.17.3", () => {
    expect(run(["version", "--short"]).stdout).toMatch(/^v3\.17\.3\+/);
  });
});

describe("helm lint --strict", () => {
  test.each(
    Object.entries(VALUE_SETS).flatMap(([set, files]) =>
      [OLDEST, NEWEST].map((k) => [set, k, files] as [string, string, string[]]),
    ),
  )("passes with the %s values on Kubernetes %s", (_set, kube, files) => {
    const r = run(["lint", "--strict", "charts/dpp", "--kube-version", `${kube}.0`, ...files]);
    expect({ status: r.status, out: r.stdout + r.stderr }).toEqual({
      status: 0,
      out: expect.stringContaining("1 chart(s) linted, 0 chart(s) failed"),
    });
    // Nothing above INFO (the one INFO: Chart.yaml has no icon).
    expect(r.stdout.split("\n").filter((l) => /^\[(WARNING|ERROR)\]/.test(l))).toEqual([]);
  });
});

describe.each(Object.entries(VALUE_SETS))("helm template with the %s values", (set, files) => {
  // Rendered in beforeAll, not while jest collects the tests: a chart Helm cannot render fails these tests (with
  // helm's message), and the lint tests above still run and say why.
  let rendered: string;
  let manifests: Manifest[];
  beforeAll(() => {
    rendered = template(files);
    manifests = manifestsOf(rendered);
  });

  test("renders the same for the oldest and the newest supported Kubernetes, and refuses an older one", () => {
    expect(template([...files, "--kube-version", `${OLDEST}.0`])).toBe(rendered);
    expect(template([...files, "--kube-version", `${NEWEST}.0`])).toBe(rendered);
    const older = run(["template", "dpp", "charts/dpp", ...files, "--kube-version", "1.26.9"]);
    expect(older.status).not.toBe(0);
    expect(older.stderr).toMatch(/kubeVersion/);
    const newer = run(["template", "dpp", "charts/dpp", ...files, "--kube-version", "1.37.0"]);
    expect(newer.status).not.toBe(0);
  });

  test(`every manifest is valid against the Kubernetes ${OLDEST} and ${NEWEST} API schemas (CRDs: their own)`, () => {
    const r = spawnSync(process.execPath, [path.join(__dirname, "validate-manifests.mjs")], {
      cwd: repoRoot,
      input: JSON.stringify(manifests),
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(r.stderr).toBe("");
    const results: Array<{ kubernetes: string; kind: string; name: string; errors: string[] }> = JSON.parse(
      r.stdout,
    );
    const builtIn = manifests.filter((m) => !m.apiVersion.startsWith("monitoring.coreos.com/"));
    expect(results.filter((e) => e.kubernetes === OLDEST)).toHaveLength(builtIn.length);
    expect(results.filter((e) => e.kubernetes === NEWEST)).toHaveLength(builtIn.length);
    expect(results.filter((e) => e.errors.length > 0)).toEqual([]);
  });

  test(`matches tools/chart/golden/${set}.yaml (update: npm run chart:golden)`, () => {
    const file = path.join(goldenDir, `${set}.yaml`);
    if (updateGolden) {
      fs.mkdirSync(goldenDir, { recursive: true });
      fs.writeFileSync(file, rendered);
    }
    expect(fs.existsSync(file)).toBe(true);
    expect(rendered).toBe(fs.readFileSync(file, "utf8"));
  });
});

describe("the production example", () => {
  let manifests: Manifest[];
  beforeAll(() => (manifests = manifestsOf(template(VALUE_SETS.production))));
  const of = (kind: string) => manifests.filter((m) => m.kind === kind);

  test("autoscales every component, spread over zones, with its disruption budget", () => {
    const deployments = of("Deployment");
    expect(deployments.length).toBeGreaterThan(0);
    const hpas = new Map(of("HorizontalPodAutoscaler").map((h) => [h.spec.scaleTargetRef.name, h.spec]));
    for (const d of deployments) {
      expect([d.metadata.name, d.spec.replicas]).toEqual([d.metadata.name, undefined]);
      expect([d.metadata.name, hpas.get(d.metadata.name)?.minReplicas]).toEqual([d.metadata.name, 3]);
      expect(d.spec.template.spec.topologySpreadConstraints[0].topologyKey).toBe(
        "topology.kubernetes.io/zone",
      );
    }
    expect(hpas.get("dpp-gateway")?.maxReplicas).toBe(20);
    expect(of("PodDisruptionBudget")).toHaveLength(deployments.length);
  });

  test("stores documents in S3 with credentials from a Secret", () => {
    const documents = of("Deployment").find((d) => d.metadata.name === "dpp-documents")!;
    const env: Array<{ name: string; value?: string; valueFrom?: any }> =
      documents.spec.template.spec.containers[0].env;
    const byName = Object.fromEntries(env.map((e) => [e.name, e]));
    expect(byName.DOCUMENTS_STORAGE.value).toBe("s3");
    expect(byName.S3_BUCKET.value).toBe("dpp-documents-production");
    expect(byName.S3_ACCESS_KEY_ID.valueFrom.secretKeyRef).toEqual({
      name: "dpp-documents-storage",
      key: "access-key-id",
    });
  });

  test("serves the API and the public pages over TLS, and makes no internal-auth Secret (existingSecret)", () => {
    const ingresses = Object.fromEntries(of("Ingress").map((i) => [i.metadata.name, i.spec]));
    expect(ingresses["dpp-gateway"].tls).toEqual([{ secretName: "api-tls", hosts: ["api.example.com"] }]);
    expect(ingresses["dpp-public-surface"].tls[0].hosts).toEqual(["passports.example.com", "id.example.com"]);
    expect(ingresses["dpp-public-surface"].rules[0].http.paths[0].backend.service.port).toEqual({
      name: "http",
    });
    expect(of("Secret")).toEqual([]);
  });
});

describe("README.md's install steps", () => {
  const readme = fs.readFileSync(path.join(chartDir, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], text: m[2] }));
  const testPublicKeys: Record<string, string[]> = YAML.parse(fs.readFileSync(testKeys, "utf8")).internalAuth
    .publicKeys;

  /** The README's keys.yaml with the test public keys in place of its placeholders. */
  function keysFile(dir: string): string {
    const block = blocks.find((b) => b.lang === "yaml" && b.text.startsWith("# keys.yaml\n"));
    expect(block).toBeDefined();
    const text = block!.text.replace(/<public key of ([a-z-]+)>/g, (_m, name: string) => {
      expect([name, testPublicKeys[name]]).toEqual([name, expect.any(Array)]);
      return testPublicKeys[name][0];
    });
    expect(text).not.toMatch(/<[^>]+>/);
    const file = path.join(dir, "keys.yaml");
    fs.writeFileSync(file, text);
    return file;
  }

  /** The `helm ...` commands of the README's sh blocks, continuation lines joined, split into words. */
  const commands = blocks
    .filter((b) => b.lang === "sh")
    .flatMap((b) => b.text.replace(/\\\n\s*/g, "").split("\n"))
    .filter((l) => l.startsWith("helm "))
    .map((l) => [...l.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]));

  test("has the two install commands", () => {
    expect(commands.map((c) => c.slice(0, 5).join(" "))).toEqual([
      "helm upgrade --install dpp charts/dpp",
      "helm upgrade --install dpp charts/dpp",
    ]);
  });

  test.each(commands.map((c) => [c.join(" "), c]))("%s renders", (_line, words) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-chart-readme-"));
    try {
      const keys = keysFile(dir);
      const args = ["template", ...words.slice(3)].map((w) => (w === "keys.yaml" ? keys : w));
      const r = run(args);
      expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: "" });
      const kinds = manifestsOf(r.stdout).map((m) => m.kind);
      expect(kinds).toContain("Deployment");
      expect(kinds).not.toContain("Secret"); // the keys come from the Secret made beforehand
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.each(Object.entries(VALUE_SETS))("gRPC addresses with the %s values", (_set, files) => {
  let services: Map<string, Manifest>;
  let config: Manifest;
  let grpc: Manifest[];
  beforeAll(() => {
    const manifests = manifestsOf(template(files));
    services = new Map(manifests.filter((m) => m.kind === "Service").map((s) => [s.metadata.name, s]));
    config = manifests.find((m) => m.kind === "ConfigMap" && m.metadata.name === "dpp-config")!;
    grpc = manifests.filter(
      (m) => m.kind === "Deployment" && m.spec.template.spec.containers[0].ports[0].name === "grpc",
    );
  });

  test("every gRPC component has a headless Service of ready pods, and keeps its ClusterIP Service", () => {
    expect(grpc.length).toBeGreaterThan(0);
    for (const d of grpc) {
      const name = d.metadata.name;
      const headless = services.get(`${name}-headless`);
      const port = d.spec.template.spec.containers[0].ports[0].containerPort;
      expect([name, headless?.spec]).toEqual([
        name,
        {
          type: "ClusterIP",
          clusterIP: "None",
          publishNotReadyAddresses: false,
          selector: d.spec.selector.matchLabels,
          ports: [{ name: "grpc", port, targetPort: "grpc", protocol: "TCP", appProtocol: "grpc" }],
        },
      ]);
      expect(services.get(name)?.spec.clusterIP).toBeUndefined();
      expect(services.get(name)?.spec.type).toBe("ClusterIP");
    }
    // The http gateway has no headless Service.
    expect(services.has("dpp-gateway-headless")).toBe(false);
  });

  test("every <NAME>_ADDR is dns:///<its headless Service>:<port>", () => {
    const addrs = Object.fromEntries(Object.entries(config.data).filter(([k]) => k.endsWith("_ADDR")));
    const expected = Object.fromEntries(
      grpc.map((d) => {
        const component = d.metadata.labels["app.kubernetes.io/component"] as string;
        const port = d.spec.template.spec.containers[0].ports[0].containerPort;
        return [
          `${component.toUpperCase().replace(/-/g, "_")}_ADDR`,
          `dns:///${d.metadata.name}-headless:${port}`,
        ];
      }),
    );
    expect(addrs).toEqual(expected);
  });

  test("the gRPC connection age and its grace are in the shared ConfigMap", () => {
    expect(config.data).toMatchObject({
      GRPC_MAX_CONNECTION_AGE_MS: "300000",
      GRPC_MAX_CONNECTION_AGE_GRACE_MS: "30000",
    });
  });
});

describe("metrics", () => {
  let defaults: Manifest[];
  let production: Manifest[];
  let off: Manifest[];
  beforeAll(() => {
    defaults = manifestsOf(template(VALUE_SETS.default));
    production = manifestsOf(template(VALUE_SETS.production));
    off = manifestsOf(template([...VALUE_SETS.default, "--set", "metrics.enabled=false"]));
  });
  const kinds = (ms: Manifest[]) => ms.map((m) => m.kind);
  const config = (ms: Manifest[]) =>
    ms.find((m) => m.kind === "ConfigMap" && m.metadata.name === "dpp-config")!;
  const repoFile = (p: string) => fs.readFileSync(path.join(repoRoot, p), "utf8");

  test("every process gets METRICS_PORT and a metrics container port; every ClusterIP Service a metrics port", () => {
    expect(config(defaults).data.METRICS_PORT).toBe("9464");
    for (const d of defaults.filter((m) => m.kind === "Deployment"))
      expect([d.metadata.name, d.spec.template.spec.containers[0].ports]).toEqual([
        d.metadata.name,
        expect.arrayContaining([{ name: "metrics", containerPort: 9464, protocol: "TCP" }]),
      ]);
    for (const s of defaults.filter((m) => m.kind === "Service")) {
      const metrics = s.spec.ports.filter((p: { name: string }) => p.name === "metrics");
      if (s.spec.clusterIP === "None") expect([s.metadata.name, metrics]).toEqual([s.metadata.name, []]);
      else
        expect([s.metadata.name, metrics]).toEqual([
          s.metadata.name,
          [{ name: "metrics", port: 9464, targetPort: "metrics", protocol: "TCP", appProtocol: "http" }],
        ]);
    }
  });

  test("each gRPC component's NetworkPolicy admits the metrics port: from anywhere by default, from metrics.from when set", () => {
    const rule = (ms: Manifest[]) =>
      ms
        .filter((m) => m.kind === "NetworkPolicy")
        .map((np) =>
          np.spec.ingress.find((r: any) => r.ports.some((p: { port: number }) => p.port === 9464)),
        );
    expect(rule(defaults).length).toBeGreaterThan(0);
    for (const r of rule(defaults)) expect(r).toEqual({ ports: [{ port: 9464, protocol: "TCP" }] });
    for (const r of rule(production))
      expect(r).toEqual({
        from: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } }],
        ports: [{ port: 9464, protocol: "TCP" }],
      });
  });

  test("metrics.enabled=false: METRICS_PORT=off and no metrics port anywhere", () => {
    expect(config(off).data.METRICS_PORT).toBe("off");
    expect(JSON.stringify(off)).not.toContain('"metrics"');
    expect(JSON.stringify(off)).not.toContain("9464");
  });

  test("no ServiceMonitor, PrometheusRule or dashboard by default", () => {
    expect(kinds(defaults)).not.toContain("ServiceMonitor");
    expect(kinds(defaults)).not.toContain("PrometheusRule");
    expect(defaults.map((m) => m.metadata.name)).not.toContain("dpp-grafana-dashboard");
  });

  test("the ServiceMonitor scrapes the ClusterIP Services' metrics port, not the headless ones, with its labels", () => {
    const sm = production.find((m) => m.kind === "ServiceMonitor")!;
    expect(sm.metadata.labels.release).toBe("kube-prometheus-stack");
    expect(sm.spec.selector.matchExpressions).toEqual([{ key: "dpp/headless", operator: "DoesNotExist" }]);
    expect(sm.spec.endpoints).toEqual([
      expect.objectContaining({ port: "metrics", path: "/metrics", interval: "30s", scrapeTimeout: "10s" }),
    ]);
    const selected = production.filter(
      (m) =>
        m.kind === "Service" &&
        Object.entries(sm.spec.selector.matchLabels).every(([k, v]) => m.metadata.labels[k] === v) &&
        !("dpp/headless" in m.metadata.labels),
    );
    const all = production.filter((m) => m.kind === "Service");
    expect(selected.map((s) => s.metadata.name).sort()).toEqual(
      all
        .filter((s) => s.spec.clusterIP !== "None")
        .map((s) => s.metadata.name)
        .sort(),
    );
    expect(selected.every((s) => s.metadata.labels["app.kubernetes.io/part-of"] === "dpp")).toBe(true);
  });

  test("the PrometheusRule holds the rule groups of deploy/prometheus/alerts.yaml", () => {
    const rule = production.find((m) => m.kind === "PrometheusRule")!;
    expect(rule.metadata.labels.release).toBe("kube-prometheus-stack");
    expect(rule.spec.groups).toEqual(YAML.parse(repoFile("deploy/prometheus/alerts.yaml")).groups);
  });

  test("the dashboard ConfigMap holds deploy/grafana/dpp-dashboard.json, labelled for Grafana's sidecar", () => {
    const cm = production.find((m) => m.metadata.name === "dpp-grafana-dashboard")!;
    expect(cm.metadata.labels.grafana_dashboard).toBe("1");
    expect(cm.metadata.annotations).toEqual({ grafana_folder: "DPP" });
    expect(JSON.parse(cm.data["dpp-dashboard.json"])).toEqual(
      JSON.parse(repoFile("deploy/grafana/dpp-dashboard.json")),
    );
  });

  test("the chart's copies of the alert rules and the dashboard are the files under deploy/ (npm run -s gen:registry)", () => {
    expect(repoFile("charts/dpp/files/prometheus-alerts.yaml")).toBe(
      repoFile("deploy/prometheus/alerts.yaml"),
    );
    expect(repoFile("charts/dpp/files/grafana-dashboard.json")).toBe(
      repoFile("deploy/grafana/dpp-dashboard.json"),
    );
  });
});
