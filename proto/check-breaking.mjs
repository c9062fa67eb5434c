// Fails when the protos break their contract (`buf breaking` over the workspace of buf.yaml: proto/ and each
// service's services/<name>/proto; rules in buf.yaml) compared with a
// baseline commit (docs/decisions/0014-typed-grpc-contracts.md):
// - PROTO_BREAKING_AGAINST, any git revision, when it is set (compared as it is, whatever follows it);
// - on a branch: the commit where it left main (`git merge-base HEAD main`; origin/main when there is no
//   local main), so that what main gained meanwhile is not read as a deletion;
// - on main itself (HEAD is main or on its line, e.g. a clean clone of main in CI): the previous commit,
//   HEAD~1 (for a merge, its first parent: the whole merged change is checked); HEAD when a proto has
//   uncommitted changes.
// A baseline from before the workspace (one module in proto/, with its own proto/buf.yaml) is compared as
// that module: buf matches files by their module-relative path (dpp/passport/v1/...), wherever they live.
// A deliberate break is a commit between the baseline and HEAD whose message has a line
// `Proto-Breaking: <why>`: the newest such commit becomes the baseline, so the break is accepted as that
// commit made it and everything after it is checked again.
// With nothing to compare against (not a git checkout, a first commit, a shallow clone without the
// baseline) it says so and passes.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const protoDir = path.dirname(new URL(import.meta.url).pathname);
const root = path.resolve(protoDir, "..");
/** What the protos are made of: the workspace file, proto/ and every service's own proto/. */
const PROTO_PATHS = ["buf.yaml", "proto", ":(glob)services/*/proto/**"];
const isProtoPath = (f) => f === "buf.yaml" || f.startsWith("proto/") || /^services\/[^/]+\/proto\//.test(f);
const buf = path.join(root, "node_modules", ".bin", "buf");
const TRAILER = "Proto-Breaking:";

/** stdout of a git command, or undefined when it fails. */
function git(...args) {
  try {
    return execFileSync("git", args, {
      cwd: root,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return undefined;
  }
}

const commit = (rev) => git("rev-parse", "--verify", "--quiet", `${rev}^{commit}`);

function baseline() {
  const head = commit("HEAD");
  if (!head) return { why: "not a git checkout with a commit" };
  const forced = process.env.PROTO_BREAKING_AGAINST;
  if (forced) {
    const sha = commit(forced);
    if (!sha) {
      console.error(`PROTO_BREAKING_AGAINST=${forced} names no commit of this checkout.`);
      process.exit(1);
    }
    return { sha, why: `PROTO_BREAKING_AGAINST=${forced}`, exact: true };
  }
  const main = ["main", "origin/main"].map(commit).find(Boolean);
  const fork = main && git("merge-base", "HEAD", main);
  if (fork && fork !== head) return { sha: fork, why: "where this branch left main" };
  // On main's line with protos changed but not committed: the change is the working tree.
  if (git("status", "--porcelain", "--", ...PROTO_PATHS))
    return { sha: head, why: "HEAD (uncommitted changes)" };
  const previous = commit("HEAD~1");
  return previous ? { sha: previous, why: "the previous commit" } : { why: "no previous commit" };
}

const base = baseline();
if (!base.sha) {
  console.log(`proto breaking check skipped: ${base.why}, nothing to compare against.`);
  process.exit(0);
}
let against = base.sha;
let why = base.why;
const accepted =
  !base.exact && git("log", "--topo-order", "--format=%H", `--grep=^${TRAILER}`, `${base.sha}..HEAD`);
if (accepted) {
  against = accepted.split("\n")[0];
  const reason = git("log", "-1", "--format=%B", against)
    .split("\n")
    .find((l) => l.startsWith(TRAILER));
  why = `the deliberate break ${against.slice(0, 12)} (${reason})`;
}

/** buf breaking against the proto/ folder of `sha`: 0 when nothing breaks. */
function check(sha) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-proto-baseline-"));
  try {
    // Only the paths that exist at `sha` (a pathspec that matches nothing would fail the archive).
    const files = (git("ls-tree", "-r", "--name-only", sha) ?? "").split("\n").filter(isProtoPath);
    const archive = execFileSync("git", ["archive", "--format=tar", sha, "--", ...files], {
      cwd: root,
      maxBuffer: 256 * 1024 * 1024,
    });
    execFileSync("tar", ["-x", "-C", tmp], { input: archive, stdio: ["pipe", "ignore", "inherit"] });
    const previous = [tmp, path.join(tmp, "proto")].find((d) => fs.existsSync(path.join(d, "buf.yaml")));
    if (!previous) {
      console.log(`proto breaking check skipped: ${sha.slice(0, 12)} has no buf.yaml.`);
      return 0;
    }
    console.log(`proto breaking check against ${sha.slice(0, 12)}: ${why}`);
    // Both sides as images: a flat set of files named by their module-relative paths, so a package that
    // moved between modules (proto/ → services/<name>/proto) is compared with itself.
    const before = path.join(tmp, "before.binpb");
    const after = path.join(tmp, "after.binpb");
    execFileSync(buf, ["build", "-o", before], { cwd: previous, stdio: "inherit" });
    execFileSync(buf, ["build", "-o", after], { cwd: root, stdio: "inherit" });
    execFileSync(buf, ["breaking", after, "--against", before, "--exclude-imports"], {
      cwd: root,
      stdio: "inherit",
    });
    return 0;
  } catch {
    console.error(
      "The protos break their contract. Add a field (a new number) or a message instead of changing one; " +
        `for a deliberate break see docs/decisions/0014-typed-grpc-contracts.md (a \`${TRAILER}\` line).`,
    );
    return 1;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

process.exitCode = check(against);
