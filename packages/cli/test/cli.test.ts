/**
 * The CLI against a small local server that answers what each test scripts: the commands that depend on
 * capabilities a server may not have yet (imports, webhooks), and what is the same on every server
 * (exit codes, settings, output). The packed CLI against the whole stack: test-e2e/pack.e2e.test.ts.
 */
import { spawn, spawnSync } from "node:child_process";
import { getEventListeners } from "node:events";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { Webhook } from "standardwebhooks";
import { run } from "../src/cli";
import { EXIT } from "../src/errors";
import type { Io } from "../src/output";

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}
type Handler = (req: Seen) => { status: number; body?: unknown };

let server: http.Server;
let base = "";
let handler: Handler;
let seen: Seen[] = [];
let dir: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let text = "";
    req.on("data", (c) => (text += c));
    req.on("end", () => {
      const s = {
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body: text ? JSON.parse(text) : undefined,
      };
      seen.push(s);
      const { status, body } = handler(s);
      res.writeHead(status, { "content-type": "application/json", "request-id": "req_test" });
      res.end(body === undefined ? "" : JSON.stringify(body));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  seen = [];
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-cli-test-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const envelope = (code: string, status: number, details: Record<string, unknown> = {}) => ({
  error: {
    type: status >= 500 ? "api_error" : "invalid_request_error",
    code,
    message: `${code} here`,
    request_id: "req_test",
    documentation_url: `https://docs.example/errors#${code}`,
    details,
  },
});
const whoami = {
  object: "whoami",
  key_id: "key_1",
  key_name: "test",
  kind: "secret",
  livemode: false,
  organization_id: "org_1",
  scopes: ["passports:write"],
  created_at: "2026-01-01T00:00:00.000Z",
  expires_at: null,
  rotation_overlap_ends_at: null,
};
const textileSchema = {
  object: "category_schema",
  id: "textile",
  name: "categories/textile/schema",
  category: "textile",
  schema_version: "1",
  json_schema: {
    type: "object",
    properties: {
      product_name: { type: "string" },
      recycled_content_percentage: { type: "number" },
      material_composition: { type: "array" },
    },
  },
};

/** A port nothing listens on (one the system just gave out and took back). */
const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = http.createServer().listen(0, "127.0.0.1", () => {
      const p = (probe.address() as AddressInfo).port;
      probe.close(() => resolve(p));
    });
  });

async function cli(
  argv: string[],
  env: Record<string, string> = {},
  until?: (out: string[], signal: AbortSignal) => boolean,
) {
  const out: string[] = [];
  const err: string[] = [];
  const controller = new AbortController();
  const io: Io = {
    out: (t) => {
      out.push(t);
      if (until?.(out, controller.signal)) controller.abort();
    },
    err: (t) => err.push(t),
    stdoutIsTTY: false,
    stderrIsTTY: false,
    readStdin: () => Promise.resolve(""),
    signal: controller.signal,
  };
  const code = await run(argv, io, {
    DPP_API_KEY: "dpp_sk_test_x",
    DPP_BASE_URL: base,
    DPP_CONFIG_DIR: dir,
    ...env,
  });
  return { code, out: out.join("\n"), err: err.join("\n"), abort: () => controller.abort() };
}

describe("dpp import", () => {
  const csv = () => {
    const file = path.join(dir, "rows.csv");
    fs.writeFileSync(
      file,
      "external_id,product_name,recycled_content_percentage\nA-1,Shirt,12\nA-2,Scarf,\nA-3,Socks,oops\n",
    );
    return file;
  };

  it("says the server has no imports (exit 9) when it answers 404 for them", async () => {
    fs.writeFileSync(path.join(dir, "rows.csv"), "external_id,product_name\nA-1,Shirt\n");
    handler = (r) =>
      r.url === "/v1/whoami"
        ? { status: 200, body: whoami }
        : r.url.startsWith("/v1/categories/")
          ? { status: 200, body: textileSchema }
          : { status: 404, body: envelope("resource_not_found", 404, { path: r.url }) };
    const r = await cli(["import", path.join(dir, "rows.csv"), "--category", "textile"]);
    expect(r.code).toBe(EXIT.notAvailable);
    expect(r.err).toContain("Importing is not available on this server.");
  });

  it("reads an XLSX sheet the same way (--dry-run prints the rows it would send)", async () => {
    handler = (r) =>
      r.url.startsWith("/v1/categories/") ? { status: 200, body: textileSchema } : { status: 500 };
    const r = await cli([
      "import",
      path.join(__dirname, "fixtures", "passports.xlsx"),
      "--category",
      "textile",
      "--dry-run",
    ]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual([
      {
        category: "textile",
        external_id: "X-1",
        data: {
          product_name: "Linen shirt",
          recycled_content_percentage: 12.5,
          material_composition: [{ fiber: "linen", percentage: 100 }],
        },
      },
      { category: "textile", external_id: "X-2", data: { product_name: "Wool scarf" } },
    ]);
    expect(seen.some((s) => s.url.includes("/imports"))).toBe(false);
  });

  it("refuses a cell its field's type does not take, before sending anything (exit 2)", async () => {
    handler = (r) =>
      r.url.startsWith("/v1/categories/") ? { status: 200, body: textileSchema } : { status: 500 };
    const r = await cli(["import", csv(), "--category", "textile"]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.err).toContain('row 4, recycled_content_percentage: "oops" is not a number.');
    expect(seen.some((s) => s.url.includes("/imports"))).toBe(false);
  });

  it("sends the rows as an import job under an Idempotency-Key, follows it, and lists failed rows (exit 10)", async () => {
    const file = path.join(dir, "rows.csv");
    fs.writeFileSync(
      file,
      "external_id,product_name,recycled_content_percentage\nA-1,Shirt,12\nA-2,Scarf,\n",
    );
    let polls = 0;
    const job = (done: boolean) => ({
      object: "import_job",
      id: "imp_1",
      status: done ? "completed" : "queued",
      total_rows: 2,
      succeeded_rows: done ? 1 : 0,
      failed_rows: done ? 1 : 0,
      pending_rows: done ? 0 : 2,
      completed_at: done ? "2026-01-01T00:00:01.000Z" : null,
    });
    handler = (r) => {
      if (r.url === "/v1/whoami") return { status: 200, body: whoami };
      if (r.url.startsWith("/v1/categories/")) return { status: 200, body: textileSchema };
      if (r.method === "POST" && r.url === "/v1/organizations/org_1/imports")
        return { status: 202, body: job(false) };
      if (r.url === "/v1/organizations/org_1/imports/imp_1?row_limit=500&after_row_index=-1")
        return ++polls === 1
          ? {
              status: 200,
              body: {
                ...job(false),
                rows: { object: "list", data: [], has_more: false, next_after_row_index: null },
              },
            }
          : {
              status: 200,
              body: {
                ...job(true),
                rows: {
                  object: "list",
                  data: [
                    {
                      object: "import_row",
                      row_index: 0,
                      external_id: "A-1",
                      status: "succeeded",
                      passport_id: "pp_1",
                      error: null,
                    },
                    {
                      object: "import_row",
                      row_index: 1,
                      external_id: "A-2",
                      status: "failed",
                      passport_id: null,
                      error: {
                        code: "validation_failed",
                        detail: "The request body failed validation (1 issue at /data/gtin).",
                        details: {
                          issues: [
                            {
                              source: { pointer: "/data/gtin" },
                              rule: "pattern",
                              message: "A GTIN has 8, 12, 13 or 14 digits and nothing else.",
                            },
                          ],
                        },
                      },
                    },
                  ],
                  has_more: false,
                  next_after_row_index: null,
                },
              },
            };
      return { status: 404, body: envelope("resource_not_found", 404) };
    };
    const r = await cli(["import", file, "--category", "textile"]);
    expect(r.code).toBe(EXIT.rowsFailed);
    const post = seen.find((s) => s.method === "POST")!;
    expect(post.headers["idempotency-key"]).toMatch(/^dpp-client-/);
    expect(post.body).toEqual({
      rows: [
        {
          category: "textile",
          external_id: "A-1",
          data: { product_name: "Shirt", recycled_content_percentage: 12 },
        },
        { category: "textile", external_id: "A-2", data: { product_name: "Scarf" } },
      ],
    });
    expect(r.out).toContain("2 rows in 1 jobs: 1 succeeded, 1 failed");
    // Each failed row says what to fix, in the column it names (not only how many issues it had).
    expect(r.out).toMatch(
      /imp_1\s+│\s+3\s+│\s+A-2\s+│\s+validation_failed gtin: A GTIN has 8, 12, 13 or 14 digits and nothing else\./,
    );
    expect(fs.readFileSync(path.join(dir, "rows.failed.csv"), "utf8")).toBe(
      "line,external_id,category,error_code,error_detail,job_id\n" +
        '3,A-2,textile,validation_failed,"gtin: A GTIN has 8, 12, 13 or 14 digits and nothing else.",imp_1\n',
    );
  });
});

describe("dpp webhooks listen", () => {
  const secret = `whsec_${Buffer.from("a secret of thirty-two bytes!!!!").toString("base64")}`;

  it("says the server has no webhooks (exit 9) when it answers 404 for them", async () => {
    handler = (r) =>
      r.url === "/v1/whoami"
        ? { status: 200, body: whoami }
        : { status: 404, body: envelope("resource_not_found", 404) };
    const r = await cli(["webhooks", "listen", "--port", "1"], { DPP_WEBHOOK_SECRET: secret });
    expect(r.code).toBe(EXIT.notAvailable);
    expect(r.err).toContain("Webhooks is not available on this server.");
  });

  it("needs the signing secret (exit 3)", async () => {
    const r = await cli(["webhooks", "listen"]);
    expect(r.code).toBe(EXIT.config);
    expect(r.err).toContain("DPP_WEBHOOK_SECRET");
  });

  it("prints a delivery whose signature verifies and answers 400 to one that does not", async () => {
    handler = (r) =>
      r.url === "/v1/whoami"
        ? { status: 200, body: whoami }
        : { status: 200, body: { object: "list", data: [] } };
    const port = await freePort();
    const running = cli(
      ["webhooks", "listen", "--port", String(port), "-o", "json"],
      { DPP_WEBHOOK_SECRET: secret },
      (out) => out.some((l) => l.includes("msg_good")),
    );
    const url = `http://127.0.0.1:${port}/`;
    let ready = false;
    for (let i = 0; i < 100 && !ready; i++)
      ready = await fetch(url, { method: "POST", body: "{}" }).then(
        (r) => r.status === 400,
        () => false,
      );
    const body = JSON.stringify({ type: "passport.published", data: { id: "pp_1" } });
    const at = new Date();
    const good = new Webhook(secret).sign("msg_good", at, body);
    const forged = await fetch(url, {
      method: "POST",
      body,
      headers: {
        "webhook-id": "msg_bad",
        "webhook-timestamp": String(Math.floor(+at / 1000)),
        "webhook-signature": "v1,AAAA",
      },
    });
    expect(forged.status).toBe(400);
    const ok = await fetch(url, {
      method: "POST",
      body,
      headers: {
        "webhook-id": "msg_good",
        "webhook-timestamp": String(Math.floor(+at / 1000)),
        "webhook-signature": good,
      },
    });
    expect(ok.status).toBe(204);
    const r = await running;
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual({
      id: "msg_good",
      payload: { type: "passport.published", data: { id: "pp_1" } },
    });
    expect(r.err).toMatch(/rejected POST \/: /);
    expect(r.out).not.toContain("msg_bad");
  });
});

describe("dpp events tail", () => {
  const event = (n: number) => ({
    object: "event",
    id: `evt_${n}`,
    name: `organizations/org_1/events/evt_${n}`,
    organization_id: "org_1",
    type: "passport.created",
    livemode: false,
    created_at: "2026-01-01T00:00:00.000Z",
    related: { object: "passport", id: `pp_${n}`, category: "textile", status: "draft", version: 1 },
  });

  /** One new event per read of the feed; `cursors` gets the cursor each read was given. */
  const oneEventPerRead = (cursors: (string | null)[] = []): Handler => {
    let reads = 0;
    return (req) => {
      if (req.url.endsWith("/whoami")) return { status: 200, body: whoami };
      cursors.push(new URL(req.url, base).searchParams.get("cursor"));
      reads++;
      return {
        status: 200,
        body: { object: "list", data: [event(reads)], has_more: false, next_cursor: `c${reads}` },
      };
    };
  };

  it("prints each new event as it comes, reads on from its cursor, and leaves nothing behind per wait", async () => {
    // The tail waits --interval between reads of the feed, hundreds of times an hour.
    const cursors: (string | null)[] = [];
    handler = oneEventPerRead(cursors);
    let listeners = -1;
    const r = await cli(["events", "tail", "--interval", "1"], {}, (out, signal) => {
      if (out.length < 40) return false;
      listeners = getEventListeners(signal, "abort").length;
      return true;
    });
    expect(r.code).toBe(EXIT.ok);
    expect(
      r.out
        .split("\n")
        .slice(0, 3)
        .map((l) => l.split(/\s+/)[2]),
    ).toEqual(["pp_1", "pp_2", "pp_3"]);
    expect(cursors.slice(0, 3)).toEqual([null, "c1", "c2"]);
    // A wait that ended leaves no listener on the command's signal (else: a leak and Node's
    // MaxListenersExceededWarning after ten waits).
    expect(listeners).toBe(0);
  });

  it("ends quietly, exit 0, when the reader of its output goes away (| head -n 1)", async () => {
    handler = oneEventPerRead();
    // As its own process, its standard output a pipe that `head` closes after the first line (asynchronously:
    // the scripted server answers from this process).
    const main = path.join(__dirname, "..", "src", "main.ts");
    const child = spawn(
      "bash",
      [
        "-c",
        `set -o pipefail; "${process.execPath}" --import tsx "${main}" events tail --interval 5 | head -n 1`,
      ],
      { env: { ...process.env, DPP_API_KEY: "k", DPP_BASE_URL: base, DPP_CONFIG_DIR: dir } },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    const status = await new Promise<number | null>((resolve) => child.on("close", resolve));
    clearTimeout(timer);
    expect(stdout).toContain("pp_1");
    expect(stderr).not.toContain("EPIPE");
    expect(status).toBe(0);
  });
});

describe("settings and exit codes", () => {
  it("uses the key of the config file when DPP_API_KEY is unset, and never takes one from a flag", async () => {
    fs.writeFileSync(
      path.join(dir, "config.json"),
      JSON.stringify({ api_key: "dpp_sk_test_fromfile", base_url: base }),
    );
    handler = () => ({ status: 200, body: whoami });
    const r = await cli(["whoami", "-o", "json"], { DPP_API_KEY: "", DPP_BASE_URL: "" });
    expect(r.code).toBe(0);
    expect(seen[0]!.headers.authorization).toBe("Bearer dpp_sk_test_fromfile");
    expect((await cli(["whoami", "--api-key", "x"])).code).toBe(EXIT.usage);
  });

  it("maps refusals to exit codes and prints the code and request id", async () => {
    handler = () => ({ status: 403, body: envelope("insufficient_scope", 403) });
    const r = await cli(["whoami"]);
    expect(r.code).toBe(EXIT.auth);
    expect(r.err).toContain("insufficient_scope (403)");
    expect(r.err).toContain("request id: req_test");
    handler = () => ({ status: 500, body: envelope("internal_error", 500) });
    expect((await cli(["whoami"], { DPP_API_KEY: "k" })).code).toBe(EXIT.failure);
  });

  it("exits 8 when nothing answers", async () => {
    // As its own process: fetch's TypeError comes from Node's realm, not from jest's sandbox.
    const closed = await freePort();
    const r = spawnSync(
      process.execPath,
      ["--import", "tsx", path.join(__dirname, "..", "src", "main.ts"), "whoami"],
      {
        env: {
          ...process.env,
          DPP_API_KEY: "k",
          DPP_BASE_URL: `http://127.0.0.1:${closed}/v1`,
          DPP_CONFIG_DIR: dir,
        },
        encoding: "utf8",
        timeout: 30_000,
      },
    );
    expect(r.stderr).toContain("No answer from the API");
    expect(r.status).toBe(EXIT.connection);
  });
});
