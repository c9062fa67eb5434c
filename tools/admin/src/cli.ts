/**
 * The admin CLI: `npm run admin -- <command> [--options]`, printing JSON.
 * It talks to the gateway schema directly; it is an operator tool, not an API.
 */
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { ApiError } from "@dpp/contract";
import { createClient, createContextSigner, createDb } from "@dpp/kit/internal";
import { filingsV1, passportV1, webhooksV1 } from "@dpp/proto";
import { Dpp } from "@dpp/client";
import { importFile, importProgressBar, readTable, schemaCache, toImportRows } from "@dpp/cli/imports";
import {
  addPerson,
  Admin,
  GATEWAY_SCHEMA,
  IdentityRepository,
  passportJson,
  SCOPES,
  type GatewayDB,
} from "@dpp/gateway";

export const USAGE = `usage: npm run admin -- <command> [options]

  org:create   --name <name> [--plan trial|starter|pro|scale] [--status trialing|active|past_due|canceled]
  plan:set     --org <id> --plan <plan> [--status <status>]
  key:create   --org <id> --mode test|live [--kind secret|connector] [--scopes a,b] [--name <name>]
               [--expires-at <RFC 3339> | --expires-in <seconds>]
  key:revoke   --key <key id>
  key:rotate   --key <key id> [--overlap <seconds, default 86400>]
  authority:issue  --org <id> --mode test|live --name "<authority, inspector>"
               (--expires-at <RFC 3339> | --expires-in <seconds>), at most 90 days
               an authority token: reads only the organization's authority-tier files, through
               GET /v1/authority/organizations/{org}/documents/{id}/download (printed once)
  authority:revoke --id <authority token id>
  org:link     --manager <id> --client <id> [--france-mandate]
  org:unlink   --manager <id> --client <id>
  grant        --key <key id> --org <client id> --scopes a,b   (the rules of POST .../grants)
  grant:revoke --key <key id> --org <client id>
  org:delegation --org <id> --status none|pending|active|revoked [--portal-brand-id <id>]
  person:add   --org <id> --email <email> --name "<name>" --password <at least 12 characters>
               a person of the organization who signs in to the review page (not an API key)
  org:attest   --org <id> --mode test|live --by "<person's name>" [--wording-version 2026-01]
               records that a named person at the brand accepted the affichage filing
               attestation, through the filings service at FILINGS_ADDR (else the running
               \`npm start\`'s), signed as "admin" like the passport operations
  webhooks:backlog --org <id> --mode test|live --id <endpoint id>
               what a webhook endpoint has still to receive (its delivered position, the feed's
               head, the events between, failures, next attempt), through the webhooks service
               at WEBHOOKS_ADDR (else the running \`npm start\`'s), signed as "admin"
  passport:deactivate | passport:reactivate | passport:lock | passport:unlock
               --org <id> --mode test|live --id <passport id> [--expected-version <n>]
               platform operations on a passport (a takedown, a legal hold), through the
               passport service at PASSPORT_ADDR (else the running \`npm start\`'s), signed
               as "admin" with INTERNAL_AUTH_PRIVATE_KEY (else the running \`npm start\`'s)

  import FILE  --org <id> --key <API key> [--category <id>] [--sheet <name>] [--base-url <url>]
               creates the passports of a CSV or XLSX file, one per row, through the API's imports
               (jobs of 500 rows, followed until every row has a result), with the key's mode and
               scopes; a progress bar on a terminal, and the failed rows written to
               <file>.failed.csv beside it. Columns: category (or --category), external_id,
               data.<field> (or <field>), typed by the category's field schema (numbers, true/false,
               JSON for lists and objects); a column repeated makes an array of its cells. The API is
               --base-url, else DPP_BASE_URL, else the running \`npm start\`'s gateway

A key is printed once, at creation (key:create, key:rotate); only its digest is stored.
A managing organization may create a live key only while its own plan or a client's is an
active Pro or Scale plan (plan_required otherwise).

Scopes: ${SCOPES.join(", ")}
The database is DATABASE_URL, else the one the running \`npm start\` wrote to .dpp/stack.json.`;

const OPTIONS = {
  name: { type: "string" },
  plan: { type: "string" },
  status: { type: "string" },
  org: { type: "string" },
  mode: { type: "string" },
  kind: { type: "string" },
  scopes: { type: "string" },
  "expires-at": { type: "string" },
  "expires-in": { type: "string" },
  key: { type: "string" },
  email: { type: "string" },
  password: { type: "string" },
  overlap: { type: "string" },
  manager: { type: "string" },
  client: { type: "string" },
  "france-mandate": { type: "boolean" },
  "portal-brand-id": { type: "string" },
  id: { type: "string" },
  "expected-version": { type: "string" },
  by: { type: "string" },
  "wording-version": { type: "string" },
  category: { type: "string" },
  sheet: { type: "string" },
  "base-url": { type: "string" },
  help: { type: "boolean" },
} as const;

class UsageError extends Error {}

function need(v: string | undefined, flag: string): string {
  if (!v) throw new UsageError(`--${flag} is required`);
  return v;
}

function databaseUrl(root: string): string {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  const s = stackFile(root);
  if (s.database_url) return s.database_url;
  throw new UsageError("Set DATABASE_URL, or start the stack with `npm start` first.");
}

function stackFile(root: string): {
  database_url?: string;
  passport_addr?: string;
  filings_addr?: string;
  webhooks_addr?: string;
  admin_private_key?: string;
  base_url?: string;
} {
  try {
    return JSON.parse(fs.readFileSync(path.join(root, ".dpp", "stack.json"), "utf8")) as {
      database_url?: string;
      passport_addr?: string;
      filings_addr?: string;
      webhooks_addr?: string;
      admin_private_key?: string;
      base_url?: string;
    };
  } catch {
    return {};
  }
}

const PASSPORT_OPERATIONS = {
  "passport:deactivate": "deactivatePassport",
  "passport:reactivate": "reactivatePassport",
  "passport:lock": "lockPassport",
  "passport:unlock": "unlockPassport",
} as const;

/** A platform transition, asked of the passport service over gRPC as the owner of passports. */
async function passportOperation(
  command: keyof typeof PASSPORT_OPERATIONS,
  values: { org?: string; mode?: string; id?: string; "expected-version"?: string },
  root: string,
): Promise<unknown> {
  const organizationId = need(values.org, "org");
  const mode = need(values.mode, "mode");
  if (mode !== "test" && mode !== "live") throw new UsageError("--mode must be test or live");
  const id = need(values.id, "id");
  const ev = values["expected-version"];
  if (ev !== undefined && !/^\d{1,9}$/.test(ev))
    throw new UsageError("--expected-version must be an integer");
  const address = process.env.PASSPORT_ADDR ?? stackFile(root).passport_addr ?? "127.0.0.1:50051";
  const privateKey = process.env.INTERNAL_AUTH_PRIVATE_KEY ?? stackFile(root).admin_private_key;
  if (!privateKey)
    throw new UsageError(
      'INTERNAL_AUTH_PRIVATE_KEY is not set and no running `npm start` wrote one: passport serves only callers it trusts (the admin CLI signs as "admin").',
    );
  const signer = createContextSigner({ issuer: "admin", privateKey });
  const client = createClient(passportV1.PassportService, address, { signer, audience: "passport" });
  try {
    const res = await client[PASSPORT_OPERATIONS[command]](
      { id, expectedVersion: ev === undefined ? undefined : Number(ev) },
      { context: { requestId: `req_admin_${Date.now()}`, organizationId, livemode: mode === "live" } },
    );
    return passportJson(res.passport!);
  } finally {
    client.close();
  }
}

/** The affichage attestation a named person accepted, recorded by the filings service that owns it. */
async function recordAttestation(
  values: { org?: string; mode?: string; by?: string; "wording-version"?: string },
  root: string,
): Promise<unknown> {
  const organizationId = need(values.org, "org");
  const mode = need(values.mode, "mode");
  if (mode !== "test" && mode !== "live") throw new UsageError("--mode must be test or live");
  const by = need(values.by, "by");
  const address = process.env.FILINGS_ADDR ?? stackFile(root).filings_addr ?? "127.0.0.1:50056";
  const privateKey = process.env.INTERNAL_AUTH_PRIVATE_KEY ?? stackFile(root).admin_private_key;
  if (!privateKey)
    throw new UsageError(
      'INTERNAL_AUTH_PRIVATE_KEY is not set and no running `npm start` wrote one: filings serves only callers it trusts (the admin CLI signs as "admin").',
    );
  const signer = createContextSigner({ issuer: "admin", privateKey });
  const client = createClient(filingsV1.FilingsService, address, { signer, audience: "filings" });
  try {
    const res = await client.recordAttestation(
      { acceptedBy: by, wordingVersion: values["wording-version"] ?? "2026-01" },
      { context: { requestId: `req_admin_${Date.now()}`, organizationId, livemode: mode === "live" } },
    );
    return {
      object: "attestation",
      organization_id: organizationId,
      livemode: mode === "live",
      accepted_by: res.acceptedBy,
      wording_version: res.wordingVersion,
      accepted_at: res.acceptedAt
        ? new Date(
            Number(res.acceptedAt.seconds) * 1000 + Math.floor(res.acceptedAt.nanos / 1e6),
          ).toISOString()
        : null,
    };
  } finally {
    client.close();
  }
}

/**
 * `import FILE`: the passports of a spreadsheet through the API's imports, with an API key of the organization
 * (the file parsing, the jobs and the failed-rows file are @dpp/cli's, shared with `dpp import`).
 */
async function importSpreadsheet(
  file: string | undefined,
  values: { org?: string; key?: string; category?: string; sheet?: string; "base-url"?: string },
  root: string,
): Promise<unknown> {
  if (!file) throw new UsageError("import needs a FILE (.csv or .xlsx)");
  if (!fs.existsSync(file)) throw new UsageError(`${file}: no such file`);
  const organizationId = need(values.org, "org");
  const apiKey = need(values.key, "key");
  const baseUrl = values["base-url"] ?? process.env.DPP_BASE_URL ?? stackFile(root).base_url;
  if (!baseUrl)
    throw new UsageError("Pass --base-url or set DPP_BASE_URL, or start the stack with `npm start`.");
  const dpp = new Dpp({ apiKey, baseUrl });
  const rows = await toImportRows(await readTable(file, values.sheet), values.category, schemaCache(dpp));
  if (rows.length === 0) throw new UsageError(`${file}: no rows`);
  const bar = importProgressBar(rows.length, process.stderr, process.stderr.isTTY === true);
  try {
    const summary = await importFile(dpp.organization(organizationId), file, rows, {
      onProgress: bar.update,
    });
    return {
      object: "import_summary",
      file,
      rows: summary.rows,
      jobs: summary.jobs,
      succeeded: summary.succeeded,
      failed: summary.failed,
      failed_rows_file: summary.failedFile,
    };
  } finally {
    bar.stop();
  }
}

/** A webhook endpoint's backlog, as the webhooks service that delivers it sees it. */
async function webhookBacklog(
  values: { org?: string; mode?: string; id?: string },
  root: string,
): Promise<unknown> {
  const organizationId = need(values.org, "org");
  const mode = need(values.mode, "mode");
  if (mode !== "test" && mode !== "live") throw new UsageError("--mode must be test or live");
  const id = need(values.id, "id");
  const address = process.env.WEBHOOKS_ADDR ?? stackFile(root).webhooks_addr ?? "127.0.0.1:50057";
  const privateKey = process.env.INTERNAL_AUTH_PRIVATE_KEY ?? stackFile(root).admin_private_key;
  if (!privateKey)
    throw new UsageError(
      'INTERNAL_AUTH_PRIVATE_KEY is not set and no running `npm start` wrote one: webhooks serves only callers it trusts (the admin CLI signs as "admin").',
    );
  const signer = createContextSigner({ issuer: "admin", privateKey });
  const client = createClient(webhooksV1.WebhooksService, address, { signer, audience: "webhooks" });
  const iso = (t?: { seconds: bigint; nanos: number }) =>
    t ? new Date(Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6)).toISOString() : null;
  try {
    const res = await client.getBacklog(
      { id },
      { context: { requestId: `req_admin_${Date.now()}`, organizationId, livemode: mode === "live" } },
    );
    return {
      object: "webhook_backlog",
      endpoint_id: id,
      url: res.endpoint?.url,
      enabled: res.endpoint?.enabled,
      disabled_reason: res.endpoint?.disabledReason || null,
      delivered_sequence: Number(res.deliveredSequence),
      head_sequence: Number(res.headSequence),
      pending_events: Number(res.pendingEvents),
      failed_attempts: res.failedAttempts,
      failing_since: iso(res.failingSince),
      next_attempt_at: iso(res.nextAttemptAt),
    };
  } finally {
    client.close();
  }
}

export async function runAdmin(argv: string[], root: string): Promise<unknown> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  const command = positionals[0];
  if (!command || values.help) throw new UsageError(USAGE);
  if (command in PASSPORT_OPERATIONS)
    return passportOperation(command as keyof typeof PASSPORT_OPERATIONS, values, root);
  if (command === "org:attest") return recordAttestation(values, root);
  if (command === "import") return importSpreadsheet(positionals[1], values, root);
  if (command === "webhooks:backlog") return webhookBacklog(values, root);
  const db = createDb<GatewayDB>({
    url: databaseUrl(root),
    schema: GATEWAY_SCHEMA,
    applicationName: "admin",
    max: 1,
  });
  const admin = new Admin(new IdentityRepository(db));
  try {
    switch (command) {
      case "org:create":
        return await admin.createOrganization(
          need(values.name, "name"),
          values.plan ?? "trial",
          values.status ?? (values.plan && values.plan !== "trial" ? "active" : "trialing"),
        );
      case "plan:set":
        return await admin.setPlan(
          need(values.org, "org"),
          need(values.plan, "plan"),
          values.status ?? "active",
        );
      case "key:create": {
        const mode = need(values.mode, "mode");
        if (mode !== "test" && mode !== "live") throw new UsageError("--mode must be test or live");
        const kind = values.kind ?? "secret";
        if (kind !== "secret" && kind !== "connector")
          throw new UsageError("--kind must be secret or connector");
        let expiresAt: Date | null = null;
        if (values["expires-at"]) expiresAt = new Date(values["expires-at"]);
        else if (values["expires-in"]) expiresAt = new Date(Date.now() + Number(values["expires-in"]) * 1000);
        if (expiresAt && Number.isNaN(expiresAt.getTime())) throw new UsageError("invalid expiry");
        return await admin.createKey({
          organizationId: need(values.org, "org"),
          livemode: mode === "live",
          kind,
          scopes: values.scopes ? values.scopes.split(",").map((s) => s.trim()) : undefined,
          name: values.name,
          expiresAt,
        });
      }
      case "authority:issue": {
        const mode = need(values.mode, "mode");
        if (mode !== "test" && mode !== "live") throw new UsageError("--mode must be test or live");
        let expiresAt: Date;
        if (values["expires-at"]) expiresAt = new Date(values["expires-at"]);
        else if (values["expires-in"]) expiresAt = new Date(Date.now() + Number(values["expires-in"]) * 1000);
        else throw new UsageError("an authority token expires: --expires-at or --expires-in is required");
        if (Number.isNaN(expiresAt.getTime())) throw new UsageError("invalid expiry");
        return await admin.issueAuthorityToken({
          organizationId: need(values.org, "org"),
          livemode: mode === "live",
          name: need(values.name, "name"),
          expiresAt,
        });
      }
      case "authority:revoke":
        return await admin.revokeAuthorityToken(need(values.id, "id"));
      case "key:revoke":
        return await admin.revokeKey(need(values.key, "key"));
      case "key:rotate": {
        const overlap = Number(values.overlap ?? 86400);
        if (!Number.isFinite(overlap) || overlap < 0) throw new UsageError("--overlap must be seconds >= 0");
        return await admin.rotateKey(need(values.key, "key"), overlap);
      }
      case "org:link":
        return await admin.linkClient(
          need(values.manager, "manager"),
          need(values.client, "client"),
          values["france-mandate"] ?? false,
        );
      case "org:unlink":
        return await admin.unlinkClient(need(values.manager, "manager"), need(values.client, "client"));
      case "grant":
        return await admin.grantChecked(
          need(values.key, "key"),
          need(values.org, "org"),
          need(values.scopes, "scopes")
            .split(",")
            .map((s) => s.trim()),
        );
      case "grant:revoke":
        return await admin.revokeGrant(need(values.key, "key"), need(values.org, "org"));
      case "person:add":
        return await addPerson(db, {
          organizationId: need(values.org, "org"),
          email: need(values.email, "email"),
          name: need(values.name, "name"),
          password: need(values.password, "password"),
        });
      case "org:delegation":
        return await admin.setAffichageDelegation(
          need(values.org, "org"),
          need(values.status, "status"),
          values["portal-brand-id"] ?? null,
        );
      default:
        throw new UsageError(`unknown command ${command}\n\n${USAGE}`);
    }
  } finally {
    await db.destroy();
  }
}

export function errorJson(err: unknown): { error: { code: string; message: string; details?: unknown } } {
  if (err instanceof ApiError)
    return { error: { code: err.code, message: err.message, details: err.details } };
  if (err instanceof UsageError) return { error: { code: "usage", message: err.message } };
  return { error: { code: "failed", message: err instanceof Error ? err.message : String(err) } };
}
