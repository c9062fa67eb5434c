import fs from "node:fs";
import path from "node:path";
import { createDb } from "@dpp/kit/internal";
import {
  Admin,
  digestOf,
  GATEWAY_SCHEMA,
  IdentityRepository,
  parseKeyText,
  type GatewayDB,
} from "@dpp/gateway";

export interface Credentials {
  organization_id: string;
  test_key: string;
  live_key: string;
  base_url: string;
}

/**
 * Reuses the demo organization and keys of .dpp/credentials.json when they are
 * still valid in this database; otherwise creates a demo organization (Pro
 * plan, active) with a test key and a live key holding every scope.
 */
export async function ensureDemoCredentials(
  databaseUrl: string,
  file: string,
  baseUrl: string,
): Promise<Credentials> {
  const db = createDb<GatewayDB>({
    url: databaseUrl,
    schema: GATEWAY_SCHEMA,
    applicationName: "stack-demo",
    max: 1,
  });
  try {
    const repo = new IdentityRepository(db);
    const existing = readCredentials(file);
    if (existing && (await stillValid(repo, existing))) {
      const creds = { ...existing, base_url: baseUrl };
      writeCredentials(file, creds);
      return creds;
    }
    const admin = new Admin(repo);
    const org = await admin.createOrganization("Demo Brand", "pro", "active");
    const test = await admin.createKey({ organizationId: org.id, livemode: false, name: "demo test key" });
    const live = await admin.createKey({ organizationId: org.id, livemode: true, name: "demo live key" });
    const creds = { organization_id: org.id, test_key: test.key, live_key: live.key, base_url: baseUrl };
    writeCredentials(file, creds);
    return creds;
  } finally {
    await db.destroy();
  }
}

async function stillValid(repo: IdentityRepository, c: Credentials): Promise<boolean> {
  for (const key of [c.test_key, c.live_key]) {
    if (!parseKeyText(key)) return false;
    const rec = await repo.findKeyByDigest(digestOf(key));
    if (!rec || rec.organization_id !== c.organization_id || rec.revoked_at || rec.rotated_at) return false;
  }
  return true;
}

function readCredentials(file: string): Credentials | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as Credentials;
  } catch {
    return undefined;
  }
}

function writeCredentials(file: string, c: Credentials): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(c, null, 2) + "\n", { mode: 0o600 });
}
