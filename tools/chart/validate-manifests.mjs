// Validates rendered Kubernetes manifests against the API schemas of the oldest and the newest Kubernetes version
// the chart supports (docs/decisions/0064-chart-validation.md), and the Prometheus Operator's resources against
// their CRD schemas. The schemas come from the kubernetes-models packages (ajv validators generated from the
// Kubernetes OpenAPI documents), pinned in package.json under one alias per Kubernetes version.
//
//   node tools/chart/validate-manifests.mjs < manifests.json
//
// stdin: a JSON array of manifests (objects with apiVersion and kind). stdout: a JSON array, one entry per
// manifest and schema it was checked against: {kubernetes, apiVersion, kind, name, errors}; errors is [] when
// valid. Exit 0 whatever the verdicts (the caller decides); 1 on a usage error.
import fs from "node:fs";

/** Kubernetes version -> the package alias carrying its schemas (package.json). */
export const KUBERNETES_SCHEMAS = {
  1.27: "kubernetes-models-1.27",
  1.36: "kubernetes-models-1.36",
};
/** API groups of custom resources -> the package carrying their CRD schemas (the same for every version). */
const CRD_SCHEMAS = { "monitoring.coreos.com": "@kubernetes-models/prometheus-operator" };

/** The module of one kind: "<pkg>/<group>/<version>/<Kind>" ("<pkg>/v1/<Kind>" for the core group). */
function modulePath(pkg, apiVersion, kind) {
  return `${pkg}/${apiVersion}/${kind}`;
}

async function validatorOf(pkg, apiVersion, kind) {
  try {
    const mod = await import(modulePath(pkg, apiVersion, kind));
    return mod[kind];
  } catch (err) {
    if (err.code === "ERR_MODULE_NOT_FOUND" || err.code === "ERR_PACKAGE_PATH_NOT_EXPORTED") return undefined;
    throw err;
  }
}

async function check(pkg, label, manifest) {
  const { apiVersion, kind } = manifest;
  const entry = { kubernetes: label, apiVersion, kind, name: manifest.metadata?.name ?? null, errors: [] };
  const Model = await validatorOf(pkg, apiVersion, kind);
  if (!Model) {
    entry.errors.push(`no schema for ${apiVersion} ${kind} in ${pkg}`);
    return entry;
  }
  try {
    new Model(manifest).validate();
  } catch (err) {
    entry.errors.push(String(err.message));
  }
  return entry;
}

export async function validateManifests(manifests) {
  const out = [];
  for (const m of manifests) {
    const group = String(m.apiVersion).includes("/") ? String(m.apiVersion).split("/")[0] : "";
    if (CRD_SCHEMAS[group]) out.push(await check(CRD_SCHEMAS[group], "crd", m));
    else for (const [label, pkg] of Object.entries(KUBERNETES_SCHEMAS)) out.push(await check(pkg, label, m));
  }
  return out;
}

const input = fs.readFileSync(0, "utf8");
let manifests;
try {
  manifests = JSON.parse(input);
  if (!Array.isArray(manifests)) throw new Error("not an array");
} catch (err) {
  console.error(`validate-manifests: stdin must be a JSON array of manifests (${err.message})`);
  process.exit(1);
}
process.stdout.write(JSON.stringify(await validateManifests(manifests)));
