/**
 * `dpp`: the command line of the DPP API v1 for integrators with an API key
 * (docs/decisions/0056-installable-sdk-and-cli.md). Built on @dpp/client; the admin operations stay in
 * the admin CLI (tools/admin). `run(argv, io)` returns the exit code (errors.ts: EXIT).
 */
import http from "node:http";
import fs from "node:fs";
import type { AddressInfo } from "node:net";
import { Command, CommanderError, Option } from "commander";
import {
  Dpp,
  DppError,
  SDK_VERSION,
  verifyWebhook,
  type CreatePassportParams,
  type Event,
  type KnownCategory,
  type Passport,
  type UpdatePassportParams,
} from "@dpp/client";
import { CursorStore, readConfig, resolveSettings, writeConfig, type Env, type Settings } from "./config";
import { ConfigError, EXIT, exitCodeOf, messageOf, NotAvailableError, UsageError } from "./errors";
import {
  chunks,
  importFile,
  importProgressBar,
  MAX_ROWS_PER_JOB,
  readTable,
  schemaCache,
  toImportRows,
} from "./imports";
import { colorsFor, json, record, table, type Format, type Io } from "./output";

/** An import answered 404 resource_not_found: this server has no imports. */
async function notAvailableAs404<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    if (err instanceof DppError && err.status === 404 && err.code === "resource_not_found")
      throw new NotAvailableError("Importing");
    throw err;
  }
}

export const CLI_VERSION = "1.0.0";

interface Globals {
  baseUrl?: string;
  org?: string;
}

/** Waits `ms`, or less if the signal aborts; leaves no listener on the signal either way (tail waits thousands of times). */
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });

function parseJson(text: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${what} is not JSON: ${(err as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new UsageError(`${what} must be a JSON object.`);
  return value as Record<string, unknown>;
}

const positiveInt = (what: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new UsageError(`${what} must be a positive integer, not ${JSON.stringify(v)}.`);
  return n;
};

export async function run(argv: string[], io: Io, env: Env): Promise<number> {
  const colors = colorsFor(io.stdoutIsTTY, env);
  const errColors = colorsFor(io.stderrIsTTY, env);
  const program = new Command("dpp");

  const settingsOf = (): Settings => resolveSettings(env, program.opts<Globals>());
  const clientOf = (s: Settings) => new Dpp({ apiKey: s.apiKey, baseUrl: s.baseUrl });
  /** The organization to act on: --org, DPP_ORGANIZATION, the config file, else the key's own. */
  async function organizationOf(s: Settings, dpp: Dpp): Promise<string> {
    return s.organization ?? (await dpp.whoami()).organization_id;
  }
  const outputOption = () =>
    new Option("-o, --output <format>", "table or json").choices(["table", "json"]).default("table");

  const printPassports = (format: Format, items: Passport[]) =>
    io.out(
      format === "json"
        ? json(items)
        : table(
            ["ID", "CATEGORY", "STATUS", "VERSION", "EXTERNAL ID", "UPDATED"],
            items.map((p) => [p.id, p.category, p.status, p.version, p.external_id, p.updated_at]),
            colors,
          ),
    );
  const printPassport = (format: Format, p: Passport) =>
    io.out(format === "json" ? json(p) : record({ ...p }, colors));

  program
    .description("The DPP API from the command line: passports, the event feed, imports, webhook deliveries.")
    .version(CLI_VERSION, "-v, --version")
    .option("--base-url <url>", "root of API v1 (default: DPP_BASE_URL, then the config file)")
    .option(
      "--org <id>",
      "the organization to act on (default: DPP_ORGANIZATION, the config file, or the key's own)",
    )
    .addHelpText(
      "after",
      `
The API key is read from DPP_API_KEY, or from the config file that \`dpp login\` writes
(${"$"}DPP_CONFIG_DIR, ${"$"}XDG_CONFIG_HOME/dpp or ~/.config/dpp); never from a flag.

Exit codes: 0 ok, 1 failure, 2 usage, 3 configuration, 4 authentication or permission,
5 not found, 6 conflict or changed version, 7 refused as invalid, 8 no answer,
9 not available on this server, 10 import rows failed.`,
    )
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.out(s.replace(/\n$/, "")),
      writeErr: (s) => io.err(s.replace(/\n$/, "")),
    })
    .showHelpAfterError("(run with --help for usage)");

  program
    .command("whoami")
    .description("the calling key: id, kind, mode, organization and scopes")
    .addOption(outputOption())
    .action(async (o: { output: Format }) => {
      const me = await clientOf(settingsOf()).whoami();
      io.out(o.output === "json" ? json(me) : record({ ...me }, colors));
    });

  program
    .command("login")
    .description("read an API key from standard input, check it, and save it in the config file (mode 0600)")
    .action(async () => {
      const baseUrl = program.opts<Globals>().baseUrl || env.DPP_BASE_URL || readConfig(env).base_url;
      if (!baseUrl) throw new ConfigError("No API base URL: pass --base-url or set DPP_BASE_URL.");
      if (io.stdoutIsTTY) io.err("Paste your API key, then Enter (it is not shown):");
      const apiKey = (await io.readStdin()).trim().split(/\r?\n/)[0]?.trim() ?? "";
      if (!apiKey) throw new UsageError("No API key on standard input.");
      const me = await new Dpp({ apiKey, baseUrl }).whoami();
      const file = writeConfig(env, {
        ...readConfig(env),
        api_key: apiKey,
        base_url: baseUrl.replace(/\/+$/, ""),
      });
      io.out(
        `Saved key ${me.key_id} (${me.livemode ? "live" : "test"}, organization ${me.organization_id}) in ${file}`,
      );
    });

  const passports = program
    .command("passports")
    .description("list, read, create, change and publish passports");
  passports
    .command("list")
    .description("passports, newest first")
    .option("--status <status>", "only passports in this state (draft, published, …)")
    .option("--category <id>", "only passports of this category")
    .option("--limit <n>", "at most this many (default 20)", positiveInt("--limit"), 20)
    .addOption(outputOption())
    .action(async (o: { status?: string; category?: string; limit: number; output: Format }) => {
      const s = settingsOf();
      const dpp = clientOf(s);
      const org = dpp.organization(await organizationOf(s, dpp));
      const items = await org.passports
        .list({
          ...(o.status ? { status: o.status as Passport["status"] } : {}),
          ...(o.category ? { category: o.category } : {}),
          limit: Math.min(o.limit, 100),
        })
        .toArray(o.limit);
      printPassports(o.output, items);
    });
  passports
    .command("get")
    .description("one passport")
    .argument("<id>", "the passport's id")
    .addOption(outputOption())
    .action(async (id: string, o: { output: Format }) => {
      const s = settingsOf();
      const dpp = clientOf(s);
      printPassport(o.output, await dpp.organization(await organizationOf(s, dpp)).passports.get(id));
    });

  const dataOf = async (o: {
    data?: string;
    dataFile?: string;
  }): Promise<Record<string, unknown> | undefined> => {
    if (o.data !== undefined && o.dataFile !== undefined)
      throw new UsageError("Give --data or --data-file, not both.");
    if (o.data !== undefined) return parseJson(o.data, "--data");
    if (o.dataFile === undefined) return undefined;
    let text: string;
    try {
      text = o.dataFile === "-" ? await io.readStdin() : fs.readFileSync(o.dataFile, "utf8");
    } catch (err) {
      throw new UsageError(`--data-file: ${(err as Error).message}`);
    }
    return parseJson(text, o.dataFile === "-" ? "standard input" : o.dataFile);
  };

  passports
    .command("create")
    .description("create a draft passport")
    .requiredOption("--category <id>", "its category (textile, battery, …); fixed for good")
    .option("--external-id <id>", "your own identifier, unique in the organization and mode")
    .option("--data <json>", "the passport's data, a JSON object of the category's fields")
    .option("--data-file <path>", "the same, from a file (- for standard input)")
    .option("--idempotency-key <key>", "your own Idempotency-Key (default: a fresh one)")
    .addOption(outputOption())
    .action(
      async (o: {
        category: string;
        externalId?: string;
        data?: string;
        dataFile?: string;
        idempotencyKey?: string;
        output: Format;
      }) => {
        const data = await dataOf(o);
        const s = settingsOf();
        const dpp = clientOf(s);
        const org = dpp.organization(await organizationOf(s, dpp));
        // The category comes from the command line: the API checks it and its data (422 when refused).
        const params = {
          category: o.category,
          ...(o.externalId ? { external_id: o.externalId } : {}),
          ...(data ? { data } : {}),
        } as CreatePassportParams & { category: KnownCategory };
        const created = await org.passports.create(
          params,
          o.idempotencyKey ? { idempotencyKey: o.idempotencyKey } : {},
        );
        printPassport(o.output, created);
      },
    );
  passports
    .command("update")
    .description("change a passport's data (a JSON Merge Patch: null removes a field)")
    .argument("<id>", "the passport's id")
    .option("--data <json>", "the fields to change, a JSON object")
    .option("--data-file <path>", "the same, from a file (- for standard input)")
    .option(
      "--expected-version <n>",
      "refuse (exit 6) if the passport changed since this version",
      positiveInt("--expected-version"),
    )
    .option("--idempotency-key <key>", "your own Idempotency-Key (default: a fresh one)")
    .addOption(outputOption())
    .action(
      async (
        id: string,
        o: {
          data?: string;
          dataFile?: string;
          expectedVersion?: number;
          idempotencyKey?: string;
          output: Format;
        },
      ) => {
        const data = await dataOf(o);
        if (!data) throw new UsageError("Give the change with --data or --data-file.");
        const s = settingsOf();
        const dpp = clientOf(s);
        const org = dpp.organization(await organizationOf(s, dpp));
        const updated = await org.passports.update(id, { data } as UpdatePassportParams, {
          ...(o.expectedVersion !== undefined ? { expectedVersion: o.expectedVersion } : {}),
          ...(o.idempotencyKey ? { idempotencyKey: o.idempotencyKey } : {}),
        });
        printPassport(o.output, updated);
      },
    );
  passports
    .command("publish")
    .description("publish a draft; warnings go to standard error")
    .argument("<id>", "the passport's id")
    .option(
      "--expected-version <n>",
      "refuse (exit 6) if the passport changed since this version",
      positiveInt("--expected-version"),
    )
    .option("--idempotency-key <key>", "your own Idempotency-Key (default: a fresh one)")
    .addOption(outputOption())
    .action(async (id: string, o: { expectedVersion?: number; idempotencyKey?: string; output: Format }) => {
      const s = settingsOf();
      const dpp = clientOf(s);
      const org = dpp.organization(await organizationOf(s, dpp));
      const published = await org.passports.publish(
        id,
        {},
        {
          ...(o.expectedVersion !== undefined ? { expectedVersion: o.expectedVersion } : {}),
          ...(o.idempotencyKey ? { idempotencyKey: o.idempotencyKey } : {}),
        },
      );
      for (const w of published.warnings) io.err(`${errColors.yellow("warning")} ${w.code}: ${w.message}`);
      printPassport(o.output, published);
    });

  const events = program.command("events").description("the organization's event feed");
  events
    .command("tail")
    .description("print the feed's events as they come, from the cursor saved by the last run (oldest first)")
    .option("--type <type...>", "only events of these types (e.g. passport.created passport.published)")
    .option("--cursor <cursor>", "start from this cursor instead of the saved one")
    .option("--from-start", "ignore the saved cursor: start at the beginning of the feed")
    .option("--once", "read to the current end of the feed, save the cursor and stop")
    .option(
      "--interval <ms>",
      "how often to ask for new events (default 250)",
      positiveInt("--interval"),
      250,
    )
    .addOption(outputOption())
    .addHelpText(
      "after",
      "\nThe cursor is saved after every page, per API, organization, mode and --type filter, in\ncursors.json beside the config file; the next run reads on from there. Ctrl-C stops (exit 0).",
    )
    .action(
      async (o: {
        type?: string[];
        cursor?: string;
        fromStart?: boolean;
        once?: boolean;
        interval: number;
        output: Format;
      }) => {
        const s = settingsOf();
        const dpp = clientOf(s);
        const me = await dpp.whoami();
        const orgId = s.organization ?? me.organization_id;
        const feed = dpp.organization(orgId).events;
        const types = [...(o.type ?? [])].sort();
        const store = CursorStore.in(env);
        const key = `${s.baseUrl} ${orgId} ${me.livemode ? "live" : "test"} ${types.join(",") || "*"}`;
        let cursor = o.cursor ?? (o.fromStart ? undefined : store.get(key));
        const print = (e: Event) => {
          if (o.output === "json") return io.out(JSON.stringify(e));
          const r = e.related as Record<string, unknown>;
          const about = [r.category, r.status, typeof r.version === "number" ? `v${r.version}` : undefined]
            .filter((x) => x !== undefined && x !== null)
            .join(" ");
          io.out(
            `${colors.dim(e.created_at)}  ${colors.cyan(e.type.padEnd(22))}  ${String(r.id ?? "")}  ${about}`.trimEnd(),
          );
        };
        while (!io.signal.aborted) {
          const list = feed.list({
            ...(types.length ? { type: types as Event["type"][] } : {}),
            ...(cursor ? { cursor } : {}),
            limit: 100,
          });
          for await (const page of list.pages()) {
            for (const e of page.data) print(e);
            if (page.next_cursor) {
              cursor = page.next_cursor;
              store.set(key, cursor);
            }
          }
          if (o.once) break;
          await sleep(o.interval, io.signal);
        }
      },
    );

  program
    .command("import")
    .description("create passports from a CSV or XLSX file, one row each, through the imports capability")
    .argument("<file>", "a .csv or .xlsx file; first row: category, external_id, then field names")
    .option("--category <id>", "the category of rows without a category column")
    .option("--sheet <name>", "the XLSX sheet (its name or number; default the first)")
    .option("--dry-run", "check and print the rows as they would be sent; send nothing")
    .option("--no-wait", "print the jobs when accepted; do not follow them")
    .addOption(outputOption())
    .addHelpText(
      "after",
      "\nCells are typed by the category's field schema: numbers, true/false, JSON for lists and objects.\nExit 10 when some rows failed (each is listed with its error code); 9 when the server has no imports.",
    )
    .action(
      async (
        file: string,
        o: { category?: string; sheet?: string; dryRun?: boolean; wait: boolean; output: Format },
      ) => {
        if (!fs.existsSync(file)) throw new UsageError(`${file}: no such file.`);
        const s = settingsOf();
        const dpp = clientOf(s);
        const rows = await toImportRows(await readTable(file, o.sheet), o.category, schemaCache(dpp));
        if (rows.length === 0) throw new UsageError(`${file}: no rows.`);
        if (o.dryRun) return io.out(json(rows));
        const orgId = await organizationOf(s, dpp);
        const org = dpp.organization(orgId);
        if (!o.wait) {
          const jobs = [];
          for (const part of chunks(rows, MAX_ROWS_PER_JOB))
            jobs.push(await notAvailableAs404(() => org.imports.create(part)));
          return io.out(
            o.output === "json"
              ? json(jobs)
              : jobs.map((j) => `${j.id} ${j.status} ${j.total_rows} rows`).join("\n"),
          );
        }
        const bar = importProgressBar(rows.length, process.stderr, io.stderrIsTTY);
        let summary;
        try {
          summary = await notAvailableAs404(() => importFile(org, file, rows, { onProgress: bar.update }));
        } finally {
          bar.stop();
        }
        const failed = summary.failures;
        if (o.output === "json") io.out(json(summary));
        else {
          io.out(
            `${rows.length} rows in ${summary.jobs} jobs: ${colors.green(`${summary.succeeded} succeeded`)}, ${failed.length ? colors.red(`${failed.length} failed`) : "0 failed"}`,
          );
          if (failed.length) {
            io.out(
              table(
                ["JOB", "LINE", "EXTERNAL ID", "ERROR"],
                failed.map((r) => [
                  r.job_id,
                  r.line ?? "",
                  r.external_id ?? "",
                  `${r.code} ${r.detail}`.trim(),
                ]),
                colors,
              ),
            );
            io.out(`failed rows: ${summary.failedFile}`);
          }
        }
        if (failed.length) throw Object.assign(new Error(""), { exitCode: EXIT.rowsFailed });
      },
    );

  const webhooks = program.command("webhooks").description("webhook deliveries");
  webhooks
    .command("listen")
    .description("a local receiver that verifies each delivery's signature and prints it")
    .option("--port <n>", "the port to listen on (default 4400)", positiveInt("--port"), 4400)
    .option("--host <host>", "the address to listen on", "127.0.0.1")
    .addOption(outputOption())
    .addHelpText(
      "after",
      "\nThe endpoint's signing secret (whsec_…) is read from DPP_WEBHOOK_SECRET or webhook_secret in the\nconfig file. Each delivery is verified (Standard Webhooks signature, timestamp within 5 minutes);\nan unverified one is answered 400 and reported on standard error. Ctrl-C stops (exit 0).",
    )
    .action(async (o: { port: number; host: string; output: Format }) => {
      const secret = env.DPP_WEBHOOK_SECRET || readConfig(env).webhook_secret;
      if (!secret)
        throw new ConfigError(
          "No signing secret: set DPP_WEBHOOK_SECRET (whsec_…) or webhook_secret in the config file.",
        );
      const s = settingsOf();
      const dpp = clientOf(s);
      const orgId = await organizationOf(s, dpp);
      // The endpoints exist on this server (a server without them answers 404 resource_not_found).
      try {
        await dpp.organization(orgId).webhooks.list({ limit: 1 }).pages().next();
      } catch (err) {
        if (err instanceof DppError && err.status === 404 && err.code === "resource_not_found")
          throw new NotAvailableError("Webhooks");
        throw err;
      }
      const server = http.createServer((req, res) => {
        const parts: Buffer[] = [];
        req.on("data", (c: Buffer) => parts.push(c));
        req.on("end", async () => {
          const body = Buffer.concat(parts).toString("utf8");
          const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
          let payload: Record<string, unknown>;
          try {
            payload = (await verifyWebhook(body, headers, secret)).event as unknown as Record<
              string,
              unknown
            >;
          } catch (err) {
            io.err(`${errColors.red("rejected")} ${req.method} ${req.url}: ${(err as Error).message}`);
            res.writeHead(400).end();
            return;
          }
          if (o.output === "json") io.out(JSON.stringify({ id: headers["webhook-id"], payload }));
          else
            io.out(
              `${colors.dim(new Date().toISOString())}  ${colors.cyan(String(payload.type ?? "").padEnd(22))}  ${headers["webhook-id"] ?? ""}`,
            );
          res.writeHead(204).end();
        });
      });
      await new Promise<void>((resolve, reject) =>
        server.once("error", reject).listen(o.port, o.host, resolve),
      );
      io.err(
        `Listening on http://${o.host}:${(server.address() as AddressInfo).port}/ for deliveries; Ctrl-C to stop.`,
      );
      await new Promise<void>((resolve) =>
        io.signal.aborted ? resolve() : io.signal.addEventListener("abort", () => resolve(), { once: true }),
      );
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

  try {
    if (argv.length === 0) {
      program.outputHelp();
      return EXIT.usage;
    }
    await program.parseAsync(argv, { from: "user" });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError)
      return err.code === "commander.helpDisplayed" || err.code === "commander.version" || err.exitCode === 0
        ? EXIT.ok
        : EXIT.usage;
    const exitCode = (err as { exitCode?: unknown }).exitCode;
    if (typeof exitCode === "number") return exitCode;
    io.err(`${errColors.red("error")} ${messageOf(err)}`);
    return exitCodeOf(err);
  }
}

export { SDK_VERSION };
