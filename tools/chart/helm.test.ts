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

type Manifest = { apiVersion: string; kind: string; metadata: { name: string }; [k: string]: any };

function run(args: string[], opts: { cwd?: string } = {}) {
  const r = spawnSync(helm, args, {
    cwd: opts.cwd ?? repoRoot,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** `helm template dpp charts/dpp` with the given values files (and flags); fails the test with helm's stderr. */
function template(args: string[]): string {
  const r = run(["template", "dpp", "charts/dpp", ...args]);
  if (r.status !== 0)
    throw new Error(`helm template ${args.join(" ")} failed (exit ${r.status}):\n${r.stderr}`);
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
  const rendered = template(files);
  const manifests = manifestsOf(rendered);

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
  const manifests = manifestsOf(template(VALUE_SETS.production));
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
  const manifests = manifestsOf(template(files));
  const services = new Map(manifests.filter((m) => m.kind === "Service").map((s) => [s.metadata.name, s]));
  const deployments = manifests.filter((m) => m.kind === "Deployment");
  const config = manifests.find((m) => m.kind === "ConfigMap" && m.metadata.name === "dpp-config")!;
  const grpc = deployments.filter((d) => d.spec.template.spec.containers[0].ports[0].name === "grpc");

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
