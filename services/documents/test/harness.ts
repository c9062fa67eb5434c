/**
 * Runs the documents service in-process on its own test database and calls it over gRPC with the kit's client,
 * as the gateway does.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql, type Kysely } from "kysely";
import { type ClientOf } from "@dpp/kit";
import { createDb } from "@dpp/kit/internal";
import { startServiceUnderTest, type Tenant, type UnderTest } from "@dpp/kit/testing";
import { documentsV1 } from "@dpp/proto";
import { documentsService } from "../src/service";
import { DOCUMENTS_SCHEMA, type DocumentsDB } from "../src/store/schema";

export type DocumentsClient = ClientOf<typeof documentsV1.DocumentsService>;

export interface Harness {
  service: UnderTest<typeof documentsService>;
  client: DocumentsClient;
  /** A connection on the service's schema, to look at what a call stored. */
  sql: Kysely<DocumentsDB>;
  /** The tenant's rows in each of the service's tables. */
  rowCounts(t: Tenant): Promise<Record<string, number>>;
  /** The filesystem store's folder. */
  storageDir: string;
  close(): Promise<void>;
}

export async function startHarness(label: string, env: Record<string, string> = {}): Promise<Harness> {
  // No passport: these tests call what needs none (an unreachable address, never another stack's).
  const storageDir = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-documents-"));
  const service = await startServiceUnderTest(
    documentsService,
    { PASSPORT_ADDR: "127.0.0.1:9", DOCUMENTS_STORAGE_DIR: storageDir, ...env },
    label,
  );
  const query = createDb<DocumentsDB>({
    url: service.database.url,
    schema: DOCUMENTS_SCHEMA,
    applicationName: "documents-test",
    max: 2,
  });
  return {
    service,
    client: service.client(documentsV1.DocumentsService),
    sql: query,
    storageDir,
    rowCounts: async (t) => {
      const counts: Record<string, number> = {};
      for (const table of ["document", "document_link", "document_dependency", "idempotency", "outbox"]) {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}
          where organization_id = ${t.organizationId} and livemode = ${t.livemode}`.execute(query);
        counts[table] = rows[0]!.n;
      }
      return counts;
    },
    close: async () => {
      await query.destroy();
      await service.close();
      fs.rmSync(storageDir, { recursive: true, force: true });
    },
  };
}
