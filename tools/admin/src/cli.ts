/**
 * The admin CLI: `npm run admin -- <command> [--options]`, printing JSON.
 * It talks to the gateway schema directly; it is an operator tool, not an API.
 */
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { ApiError, createDb } from "@dpp/kit";
import { Admin, GATEWAY_SCHEMA, IdentityRepository, SCOPES, type GatewayDB } from "@dpp/gateway";

export const USAGE = `usage: npm run admin -- <command> [options]

  org:create   --name <name> [--plan trial|starter|pro|scale] [--status trialing|active|past_due|canceled]
  plan:set     --org <id> --plan <plan> [--status <status>]
  key:create   --org <id> --mode test|live [--kind secret|connector] [--scopes a,b] [--name <name>]
               [--expires-at <RFC 3339> | --expires-in <seconds>]
  key:revoke   --key <key id>
  key:rotate   --key <key id> [--overlap <seconds, default 86400>]
  org:link     --manager <id> --client <id> [--france-mandate]
  org:unlink   --manager <id> --client <id>
  grant        --key <key id> --org <client id> --scopes a,b   (the rules of POST .../grants)
  grant:revoke --key <key id> --org <client id>
  org:delegation --org <id> --status none|pending|active|revoked [--portal-brand-id <id>]

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
  overlap: { type: "string" },
  manager: { type: "string" },
  client: { type: "string" },
  "france-mandate": { type: "boolean" },
  "portal-brand-id": { type: "string" },
  help: { type: "boolean" },
} as const;

class UsageError extends Error {}

function need(v: string | undefined, flag: string): string {
  if (!v) throw new UsageError(`--${flag} is required`);
  return v;
}

function databaseUrl(root: string): string {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  try {
    const s = JSON.parse(fs.readFileSync(path.join(root, ".dpp", "stack.json"), "utf8")) as {
      database_url?: string;
    };
    if (s.database_url) return s.database_url;
  } catch {
    // fall through
  }
  throw new UsageError("Set DATABASE_URL, or start the stack with `npm start` first.");
}

export async function runAdmin(argv: string[], root: string): Promise<unknown> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  const command = positionals[0];
  if (!command || values.help) throw new UsageError(USAGE);
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
