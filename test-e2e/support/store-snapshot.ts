/**
 * What the services stored for one organization, as one fingerprint read in one query: every row of its
 * passports, GTIN claims, publish approvals, validation records and grants, and the events of its
 * feed. Two equal fingerprints mean nothing was stored in between. Events reach the feed after the write that
 * emitted them commits (outbox → bus → feed), so `feed` is reported apart: compare it once the pipeline is idle.
 */
import { sql, type Kysely } from "kysely";
import { createDb } from "@dpp/kit/internal";

export interface StoreSnapshot {
  /** Fingerprint of the rows written in the request's own transactions. */
  rows: string;
  /** Number of events in the organization's feeds (both modes). */
  feed: number;
}

export interface StoreReader {
  snapshot(organizationId: string): Promise<StoreSnapshot>;
  close(): Promise<void>;
}

export function storeReader(databaseUrl: string): StoreReader {
  const db: Kysely<unknown> = createDb<unknown>({
    url: databaseUrl,
    schema: "public",
    applicationName: "e2e-snapshot",
    max: 1,
  });
  return {
    async snapshot(organizationId: string) {
      const table = (name: string, column = "organization_id") =>
        sql`(select md5(coalesce(string_agg(t::text, '|' order by t::text), '')) from ${sql.raw(name)} t where t.${sql.ref(column)} = ${organizationId})`;
      const { rows } = await sql<{ rows: string; feed: number }>`
        select md5(concat_ws(',',
          ${table("passport.passport")},
          ${table("passport.gtin_claim")},
          ${table("passport.publish_approval")},
          ${table("passport.validation")},
          ${table("gateway.grant")}
        )) as rows,
        (select count(*) from events.event where organization_id = ${organizationId})::int as feed`.execute(
        db,
      );
      return rows[0]!;
    },
    close: () => db.destroy(),
  };
}
