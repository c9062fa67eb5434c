/**
 * The SDK and the CLI as integrators get them (docs/decisions/0056-installable-sdk-and-cli.md): both
 * are built and packed with `npm pack`, the tarballs installed with plain npm into a project outside
 * the workspace, and then, against a running stack: the SDK README's quick start as written, from an
 * ES module, from CommonJS, and type-checked as TypeScript with the package's own declarations; and
 * the `dpp` CLI's main commands. Also the package's shape and its size budget.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net, { type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { buildSync } from "esbuild";
import { startHarness, type Harness, type Tenant } from "./support/harness";

jest.setTimeout(300_000);

const root = path.resolve(__dirname, "..");
const CLIENT = path.join(root, "packages", "client");
const CLI = path.join(root, "packages", "cli");
/** Budgets: what a browser app's bundler adds when it imports the whole SDK (minified, gzip), and the tarball. */
const BUNDLE_BUDGET_GZIP = 8 * 1024;
const TARBALL_BUDGET = 128 * 1024; // six resources and their generated types since 1.0.0: about 101 KiB

let h: Harness;
let t: Tenant;
let scratch: string;
let configDir: string;
let clientTarball: string;
let cliTarball: string;

/** The environment of an integrator's shell: none of the npm or workspace variables of this test run. */
function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(npm_|NODE_OPTIONS$|NODE_PATH$|INIT_CWD$|PNPM_)/i.test(k)) env[k] = v;
  return { ...env, NO_COLOR: "1", DPP_CONFIG_DIR: configDir, ...extra };
}

function pack(dir: string, into: string): string {
  const out = execFileSync("npm", ["pack", "--json", "--pack-destination", into], {
    cwd: dir,
    env: cleanEnv(),
    encoding: "utf8",
  });
  const [info] = JSON.parse(out) as { filename: string }[];
  return path.join(into, info!.filename);
}

/** The README block after `<!-- quick-start:<name> -->`. */
function readmeBlock(name: string): string {
  const readme = fs.readFileSync(path.join(CLIENT, "README.md"), "utf8");
  const at = readme.indexOf(`<!-- quick-start:${name} -->`);
  expect(at).toBeGreaterThan(0);
  const m = /```\w*\n([\s\S]*?)```/.exec(readme.slice(at));
  return m![1]!;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A valid GTIN-13 no other passport of this run has (publishing needs one, and a GTIN is published once). */
let gtins = 0;
function freshGtin(): string {
  const body = `40${String(Date.now() % 1e8).padStart(8, "0")}${String(++gtins).padStart(2, "0")}`;
  const sum = [...body].reduce((n, d, i) => n + Number(d) * (i % 2 === 0 ? 1 : 3), 0);
  return body + String((10 - (sum % 10)) % 10);
}

function node(file: string, extra: Record<string, string> = {}): Run {
  const r = spawnSync("node", [file], {
    cwd: scratch,
    env: cleanEnv({ DPP_API_KEY: t.testKey, DPP_BASE_URL: h.stack.baseUrl, GTIN: freshGtin(), ...extra }),
    encoding: "utf8",
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** `npx dpp …` in the scratch project, as an integrator types it. */
function dpp(args: string[], extra: Record<string, string> = {}, input?: string): Run {
  const r = spawnSync("npx", ["--no-install", "dpp", ...args], {
    cwd: scratch,
    env: cleanEnv({ DPP_API_KEY: t.testKey, DPP_BASE_URL: h.stack.baseUrl, ...extra }),
    encoding: "utf8",
    timeout: 60_000,
    ...(input !== undefined ? { input } : {}),
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(async () => {
  // The packages are built here, so that `npm test` needs no build step of its own.
  execFileSync("node", [path.join(CLIENT, "scripts", "build.mjs")], { stdio: "pipe" });
  execFileSync("node", [path.join(CLI, "scripts", "build.mjs")], { stdio: "pipe" });
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-integrator-"));
  configDir = path.join(scratch, ".config-dpp");
  clientTarball = pack(path.join(root, "dist", "client"), scratch);
  cliTarball = pack(path.join(root, "dist", "cli"), scratch);
  fs.writeFileSync(
    path.join(scratch, "package.json"),
    JSON.stringify({ name: "integrator-scratch", version: "1.0.0", private: true }),
  );
  const types = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).devDependencies[
    "@types/node"
  ] as string;
  execFileSync(
    "npm",
    ["install", "--no-audit", "--no-fund", clientTarball, cliTarball, `@types/node@${types}`],
    { cwd: scratch, env: cleanEnv(), stdio: "pipe" },
  );
  h = await startHarness("e2e_pack");
  t = await h.tenant("Packed SDK Brand");
});
afterAll(async () => {
  await h?.close();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

describe("the packed SDK", () => {
  it("is a publishable package: compiled CommonJS and ES modules with declarations, no workspace dependency", () => {
    expect(path.relative(root, scratch).startsWith("..")).toBe(true);
    const listing = execFileSync("tar", ["-tzf", clientTarball], { encoding: "utf8" }).split("\n");
    for (const file of [
      "package/package.json",
      "package/README.md",
      "package/CHANGELOG.md",
      "package/cjs/index.js",
      "package/cjs/index.d.ts",
      "package/esm/index.js",
      "package/esm/index.d.ts",
    ])
      expect(listing).toContain(file);
    expect(listing.filter((f) => /\.ts$/.test(f) && !f.endsWith(".d.ts"))).toEqual([]);

    const manifest = JSON.parse(
      fs.readFileSync(path.join(scratch, "node_modules", "@dpp", "client", "package.json"), "utf8"),
    );
    const source = JSON.parse(fs.readFileSync(path.join(CLIENT, "package.json"), "utf8"));
    expect(manifest).toMatchObject({ name: "@dpp/client", version: source.version, sideEffects: false });
    expect(manifest.private).toBeUndefined();
    expect(manifest.exports["."]).toEqual({
      import: { types: "./esm/index.d.ts", default: "./esm/index.js" },
      require: { types: "./cjs/index.d.ts", default: "./cjs/index.js" },
    });
    expect(Object.values(manifest.dependencies as Record<string, string>).join(" ")).not.toMatch(
      /workspace:/,
    );
    expect(manifest.engines.node).toBe(">=20.3");
  });

  it("follows the API's version: its major is the served document's, and the CHANGELOG has its entry", async () => {
    const served = (await h.request("/openapi.json")).body as { info: { version: string } };
    const { version } = JSON.parse(fs.readFileSync(path.join(CLIENT, "package.json"), "utf8"));
    expect(version.split(".")[0]).toBe(served.info.version.split(".")[0]);
    expect(fs.readFileSync(path.join(CLIENT, "CHANGELOG.md"), "utf8")).toContain(`## ${version}`);
    // The installed SDK says the same version in its User-Agent.
    fs.writeFileSync(
      path.join(scratch, "version.cjs"),
      'console.log(require("@dpp/client").SDK_VERSION, require("@dpp/client/package.json").version);',
    );
    expect(node("version.cjs").stdout.trim()).toBe(`${version} ${version}`);
  });

  it("stays within its size budget", () => {
    const tarball = fs.statSync(clientTarball).size;
    const bundle = buildSync({
      stdin: { contents: 'export * from "@dpp/client";', resolveDir: scratch, loader: "js" },
      bundle: true,
      minify: true,
      format: "esm",
      platform: "browser",
      write: false,
    });
    const gzip = zlib.gzipSync(bundle.outputFiles[0]!.contents).length;
    console.log(`@dpp/client: tarball ${tarball} B, browser bundle ${gzip} B gzip`);
    expect(gzip).toBeLessThanOrEqual(BUNDLE_BUDGET_GZIP);
    expect(tarball).toBeLessThanOrEqual(TARBALL_BUDGET);
    // Nothing of Node is pulled into a browser bundle.
    expect(bundle.outputFiles[0]!.text).not.toMatch(/node:|require\(/);
  });

  const expectQuickStart = async (r: Run, published: boolean) => {
    if (r.code !== 0) throw new Error(`exit ${r.code}\n${r.stdout}\n${r.stderr}`);
    const id = /^created (\S+) version 1$/m.exec(r.stdout)?.[1];
    expect(id).toBeDefined();
    if (published) expect(r.stdout).toContain(`published ${id} published`);
    const stored = await h.request(`/organizations/${t.organizationId}/passports/${id}`, { key: t.testKey });
    expect(stored.body).toMatchObject({ id, status: "published" });
    return id!;
  };

  it("runs the README's quick start as an ES module", async () => {
    fs.writeFileSync(path.join(scratch, "quick-start.mjs"), readmeBlock("esm"));
    const r = node("quick-start.mjs");
    const id = await expectQuickStart(r, true);
    expect(r.stdout).toContain("refused: changed meanwhile");
    // The feed loop ran; the published event reaches the feed asynchronously, so it may come after the loop.
    for (const line of r.stdout.split("\n").filter((l) => l.startsWith("event ")))
      expect(line).toBe(`event passport.published ${id}`);
  });

  it("runs the README's CommonJS quick start", async () => {
    fs.writeFileSync(path.join(scratch, "quick-start.cjs"), readmeBlock("cjs"));
    await expectQuickStart(node("quick-start.cjs"), true);
  });

  it("type-checks the quick start (TypeScript as ESM, the CommonJS block with checkJs) with the package's own declarations", () => {
    fs.writeFileSync(path.join(scratch, "quick-start.mts"), readmeBlock("esm"));
    fs.writeFileSync(path.join(scratch, "quick-start.cjs"), readmeBlock("cjs"));
    // A misspelt field of the textile schema must not compile: the declarations carry the real types.
    fs.writeFileSync(
      path.join(scratch, "misspelt.mts"),
      'import { Dpp } from "@dpp/client";\nconst dpp = new Dpp({ apiKey: "k", baseUrl: "u" });\n' +
        'await dpp.organization("o").passports.create({ category: "textile", data: { product_nam: "x" } });\n',
    );
    const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc");
    const check = (files: string[]) =>
      spawnSync(
        "node",
        [
          tsc,
          "--noEmit",
          "--strict",
          "--skipLibCheck",
          "false",
          "--module",
          "nodenext",
          "--moduleResolution",
          "nodenext",
          "--target",
          "es2022",
          "--types",
          "node",
          "--allowJs",
          "--checkJs",
          ...files,
        ],
        { cwd: scratch, encoding: "utf8" },
      );
    const ok = check(["quick-start.mts", "quick-start.cjs"]);
    if (ok.status !== 0) throw new Error(ok.stdout + ok.stderr);
    const bad = check(["misspelt.mts"]);
    expect(bad.status).not.toBe(0);
    expect(bad.stdout).toContain("product_nam");
  });
});

describe("the packed CLI", () => {
  it("prints its commands with npx dpp --help", () => {
    const r = dpp(["--help"]);
    expect(r.code).toBe(0);
    for (const command of ["whoami", "passports", "events", "import", "webhooks", "login"])
      expect(r.stdout).toMatch(new RegExp(`^  ${command}\\b`, "m"));
    const sub = dpp(["passports", "--help"]);
    expect(sub.code).toBe(0);
    for (const command of ["list", "get", "create", "update", "publish"])
      expect(sub.stdout).toMatch(new RegExp(`^  ${command}\\b`, "m"));
    expect(dpp(["events", "tail", "--help"]).stdout).toContain("--once");
  });

  it("answers whoami, and exits 3 without a key, 4 with a wrong one, 2 on a bad option", () => {
    const me = dpp(["whoami", "-o", "json"]);
    expect(me.code).toBe(0);
    expect(JSON.parse(me.stdout)).toMatchObject({ object: "whoami", organization_id: t.organizationId });
    expect(dpp(["whoami"]).stdout).toContain(t.organizationId);

    const none = dpp(["whoami"], { DPP_API_KEY: "" });
    expect(none.code).toBe(3);
    expect(none.stderr).toContain("DPP_API_KEY");
    const wrong = dpp(["whoami"], { DPP_API_KEY: "dpp_sk_test_notakey" });
    expect(wrong.code).toBe(4);
    expect(wrong.stderr).toMatch(/invalid_key \(401\)/);
    expect(dpp(["whoami", "--nope"]).code).toBe(2);
  });

  it("saves a key with dpp login, read from standard input, and uses it", () => {
    const login = dpp(["login"], { DPP_API_KEY: "" }, `${t.testKey}\n`);
    expect(login.code).toBe(0);
    const file = path.join(configDir, "config.json");
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(fs.readFileSync(file, "utf8"))).toMatchObject({ api_key: t.testKey });
    const me = dpp(["whoami", "-o", "json"], { DPP_API_KEY: "", DPP_BASE_URL: "" });
    expect(me.code).toBe(0);
    expect(JSON.parse(me.stdout).organization_id).toBe(t.organizationId);
  });

  it("creates, reads, lists, changes and publishes a passport, with exit codes to branch on", () => {
    const created = dpp([
      "passports",
      "create",
      "--category",
      "textile",
      "--external-id",
      `cli-${Date.now()}`,
      "--data",
      JSON.stringify({
        product_name: "CLI shirt",
        manufacturer_name: "Acme",
        manufacturer_address: "1 Rua, Porto",
        manufacturer_country: "PT",
        material_composition: [{ fiber: "cotton", percentage: 100 }],
        substances_of_concern: [],
        recycling_instructions: "Textile bank",
        care_instructions: "30 °C",
        gtin: freshGtin(),
      }),
      "-o",
      "json",
    ]);
    expect(created.code).toBe(0);
    const p = JSON.parse(created.stdout) as { id: string; version: number; status: string };
    expect(p).toMatchObject({ status: "draft", version: 1 });

    const table = dpp(["passports", "get", p.id]);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain("CLI shirt");
    expect(table.stdout).not.toContain("\u001b["); // no colour when stdout is not a terminal

    const list = dpp(["passports", "list", "--status", "draft", "-o", "json"]);
    expect((JSON.parse(list.stdout) as { id: string }[]).map((x) => x.id)).toContain(p.id);
    expect(dpp(["passports", "list"]).stdout).toMatch(
      new RegExp(`${p.id}\\s+│\\s+textile\\s+│\\s+draft\\s+│\\s+1\\s`),
    );

    const updated = dpp([
      "passports",
      "update",
      p.id,
      "--data",
      '{"product_name":"CLI shirt v2"}',
      "--expected-version",
      "1",
      "-o",
      "json",
    ]);
    expect(updated.code).toBe(0);
    const v2 = JSON.parse(updated.stdout) as { version: number; data: { product_name: string } };
    expect(v2.data.product_name).toBe("CLI shirt v2");

    const stale = dpp([
      "passports",
      "update",
      p.id,
      "--data",
      '{"product_name":"X"}',
      "--expected-version",
      "1",
    ]);
    expect(stale.code).toBe(6);
    expect(stale.stderr).toContain("precondition_failed");
    expect(dpp(["passports", "create", "--category", "textile", "--data", '{"nope":1}']).code).toBe(7);
    expect(dpp(["passports", "create", "--category", "textile", "--data", "{nope"]).code).toBe(2);
    expect(dpp(["passports", "get", "pas_doesnotexist"]).code).toBe(5);

    const published = dpp([
      "passports",
      "publish",
      p.id,
      "--expected-version",
      String(v2.version),
      "-o",
      "json",
    ]);
    expect(published.code).toBe(0);
    expect(JSON.parse(published.stdout)).toMatchObject({ id: p.id, status: "published" });
  });

  it("dpp events tail prints a passport.created within a second of the create, and reads on from its saved cursor", async () => {
    const sdk = h.sdk(t.testKey).organization(t.organizationId);
    // Read the feed to its end once, so that the cursor is saved.
    const first = dpp(["events", "tail", "--once", "--type", "passport.created", "-o", "json"]);
    expect(first.code).toBe(0);

    // The installed bin itself (npx would stand between the signal and the process).
    const tail: ChildProcess = spawn(
      path.join(scratch, "node_modules", ".bin", "dpp"),
      ["events", "tail", "--type", "passport.created", "-o", "json"],
      { cwd: scratch, env: cleanEnv({ DPP_API_KEY: t.testKey, DPP_BASE_URL: h.stack.baseUrl }) },
    );
    const seen: { at: number; event: { type: string; related: { id: string } } }[] = [];
    let buffered = "";
    tail.stdout!.on("data", (d: Buffer) => {
      buffered += d.toString();
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (line.trim()) seen.push({ at: Date.now(), event: JSON.parse(line) });
      }
    });
    const exited = new Promise<number | null>((r) => tail.once("exit", (code) => r(code)));
    const hardStop = setTimeout(() => tail.kill("SIGKILL"), 120_000).unref();
    try {
      // The tail is running once its first poll has been answered (Node starts first).
      await new Promise((r) => setTimeout(r, 2000));
      expect(seen).toEqual([]); // nothing before the saved cursor is printed again
      const createdAt = Date.now();
      const created = await sdk.passports.create({ category: "textile", data: { product_name: "Tailed" } });
      // Meanwhile, when the feed itself has the event (the pipeline's share of the delay), read as fast as it can.
      let inFeedAt = 0;
      const until = createdAt + 10_000;
      while ((!inFeedAt || !seen.some((s) => s.event.related.id === created.id)) && Date.now() < until) {
        if (!inFeedAt) {
          const feed = await sdk.events.list({ type: ["passport.created"], limit: 100 }).toArray();
          if (feed.some((e) => e.related.object === "passport" && e.related.id === created.id))
            inFeedAt = Date.now();
        } else await new Promise((r) => setTimeout(r, 10));
      }
      const hit = seen.find((s) => s.event.related.id === created.id);
      expect(hit?.event.type).toBe("passport.created");
      console.log(
        `dpp events tail printed passport.created ${hit!.at - createdAt} ms after the create ` +
          `(in the feed after ${inFeedAt - createdAt} ms)`,
      );
      // The tail's own share: it polls every 250 ms, so it prints within a few polls of the feed having it
      // even on a busy machine (a tail that waited for a longer poll interval, 5 s, would not).
      expect(hit!.at - inFeedAt).toBeLessThan(2000);
      expect(hit!.at - createdAt).toBeLessThan(2500 + Math.max(0, inFeedAt - createdAt - 500));
    } finally {
      tail.kill("SIGINT");
    }
    expect(await exited).toBe(0);
    clearTimeout(hardStop);

    // The cursor was saved: a new run prints only what came after.
    const later = await sdk.passports.create({ category: "textile", data: { product_name: "After" } });
    const again = dpp(["events", "tail", "--once", "--type", "passport.created", "-o", "json"]);
    expect(again.code).toBe(0);
    const ids = again.stdout
      .trim()
      .split("\n")
      .map((l) => (JSON.parse(l) as { related: { id: string } }).related.id);
    expect(ids).toEqual([later.id]);
  });

  it("reads a CSV for dpp import, each cell typed by the category's field schema (--dry-run)", () => {
    fs.writeFileSync(
      path.join(scratch, "passports.csv"),
      "category,external_id,product_name,material_composition,recycled_content_percentage,gtin\n" +
        'textile,IMP-1,Linen shirt,"[{""fiber"":""linen"",""percentage"":100}]",12.5,4006381333931\n' +
        "textile,IMP-2,Wool scarf,,,\n",
    );
    const r = dpp(["import", "passports.csv", "--dry-run"]);
    if (r.code !== 0) throw new Error(r.stderr);
    expect(JSON.parse(r.stdout)).toEqual([
      {
        category: "textile",
        external_id: "IMP-1",
        data: {
          product_name: "Linen shirt",
          material_composition: [{ fiber: "linen", percentage: 100 }],
          recycled_content_percentage: 12.5,
          gtin: "4006381333931",
        },
      },
      { category: "textile", external_id: "IMP-2", data: { product_name: "Wool scarf" } },
    ]);
    expect(dpp(["import", "missing.csv"]).code).toBe(2);
  });

  it("imports a CSV through the imports capability: passports created, a failed row listed with its code, exit 10 and its failed-rows file", async () => {
    const sdk = h.sdk(t.testKey).organization(t.organizationId);
    const taken = `PACK-DUP-${Date.now()}`;
    await sdk.passports.create({
      category: "textile",
      external_id: taken,
      data: { product_name: "Already here" },
    });
    const run = Date.now();
    const file = path.join(scratch, "live.csv");
    fs.writeFileSync(
      file,
      "category,external_id,product_name,recycled_content_percentage\n" +
        `textile,PACK-A-${run},Linen shirt,12.5\n` +
        `textile,${taken},Duplicate,\n` +
        `textile,PACK-B-${run},Wool scarf,\n`,
    );
    const r = dpp(["import", "live.csv"]);
    expect(r.code).toBe(10); // some rows failed: a script can branch on it
    expect(r.stdout).toContain("3 rows in 1 jobs: 2 succeeded, 1 failed");
    expect(r.stdout).toMatch(/already_exists/);
    // The failed rows, beside the input, with the line in the file and the error code.
    const failed = fs.readFileSync(path.join(scratch, "live.failed.csv"), "utf8");
    expect(failed.split("\n")[0]).toMatch(/line/);
    expect(failed).toContain(taken);
    expect(failed).toContain("already_exists");
    // What the server now holds: the two new rows, each once, typed by the schema.
    const all = await sdk.passports.list({ category: "textile", limit: 100 }).toArray();
    const byExternal = (id: string) => all.filter((p) => p.external_id === id);
    expect(byExternal(`PACK-A-${run}`).map((p) => p.data.product_name)).toEqual(["Linen shirt"]);
    expect(byExternal(`PACK-A-${run}`)[0]!.data.recycled_content_percentage).toBe(12.5);
    expect(byExternal(`PACK-B-${run}`).map((p) => p.data.product_name)).toEqual(["Wool scarf"]);
    expect(byExternal(taken).map((p) => p.data.product_name)).toEqual(["Already here"]);
  });

  it("dpp webhooks listen prints each verified delivery and refuses a forged one", async () => {
    const sdk = h.sdk(t.testKey).organization(t.organizationId);
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (probe.address() as AddressInfo).port;
        probe.close(() => resolve(p));
      });
    });
    const endpoint = await sdk.webhooks.create({
      url: `http://127.0.0.1:${port}/`,
      types: ["passport.created"],
      description: "dpp webhooks listen",
    });
    const listen: ChildProcess = spawn(
      path.join(scratch, "node_modules", ".bin", "dpp"),
      ["webhooks", "listen", "--port", String(port), "-o", "json"],
      {
        cwd: scratch,
        env: cleanEnv({
          DPP_API_KEY: t.testKey,
          DPP_BASE_URL: h.stack.baseUrl,
          DPP_WEBHOOK_SECRET: endpoint.secret,
        }),
      },
    );
    const lines: { id: string; payload: { type: string; related: { id: string } } }[] = [];
    let out = "";
    let err = "";
    listen.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      let nl: number;
      while ((nl = out.indexOf("\n")) >= 0) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        if (line.trim()) lines.push(JSON.parse(line));
      }
    });
    listen.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => listen.once("exit", (code) => r(code)));
    const hardStop = setTimeout(() => listen.kill("SIGKILL"), 120_000).unref();
    const until = async (ok: () => boolean, what: string) => {
      const end = Date.now() + 30_000;
      while (!ok()) {
        if (Date.now() > end) throw new Error(`${what} not seen; stderr: ${err}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    try {
      await until(() => err.includes("Listening on"), "the listening line");
      const created = await sdk.passports.create({ category: "textile", data: { product_name: "Hooked" } });
      await until(() => lines.some((l) => l.payload.related.id === created.id), "the delivery");
      const hit = lines.find((l) => l.payload.related.id === created.id)!;
      expect(hit.payload.type).toBe("passport.created");
      expect(hit.id).toMatch(/\S/);

      // A delivery signed with another secret is answered 400 and reported, not printed.
      const forged = await fetch(`http://127.0.0.1:${port}/`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "webhook-id": "msg_forged",
          "webhook-timestamp": String(Math.floor(Date.now() / 1000)),
          "webhook-signature": "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        },
        body: JSON.stringify({ type: "passport.created", related: { id: "forged" } }),
      });
      expect(forged.status).toBe(400);
      await until(() => err.includes("rejected"), "the rejection");
      expect(lines.some((l) => l.id === "msg_forged")).toBe(false);
    } finally {
      listen.kill("SIGINT");
    }
    expect(await exited).toBe(0);
    clearTimeout(hardStop);
    await sdk.webhooks.delete(endpoint.id);
  });
});
