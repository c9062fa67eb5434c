/**
 * Every query of the filings service. Each filters organization_id and livemode; each write goes through the
 * kit's transaction or singleStatement with the call's context, so that a keyed call's write commits with its
 * idempotency record.
 */
import type { Kysely, Selectable } from "kysely";
import type { DomainEvent } from "@dpp/contract";
import { singleStatement, transaction, writeOutbox, type RequestContext, type TenantContext } from "@dpp/kit";
import type { AffichageTable, AttestationTable, FilingsDB } from "./schema";

export type AffichageRow = Selectable<AffichageTable>;
export type AttestationRow = Selectable<AttestationTable>;

export interface FiledAffichage {
  passport_id: string;
  filed_at: Date;
  portal_gtin: string;
  portal_score: number;
  standardized_score: number;
  durability: number;
  engine_version: string;
  declaration: unknown;
}

export class FilingsStore {
  constructor(readonly db: Kysely<FilingsDB>) {}

  findAffichage(t: TenantContext, passportId: string): Promise<AffichageRow | undefined> {
    return this.db
      .selectFrom("affichage")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .where("passport_id", "=", passportId)
      .executeTakeFirst();
  }

  findAttestation(t: TenantContext): Promise<AttestationRow | undefined> {
    return this.db
      .selectFrom("attestation")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode)
      .executeTakeFirst();
  }

  /** Records a filing and its event in the call's transaction. */
  recordFiling(ctx: RequestContext, t: TenantContext, a: FiledAffichage, event: DomainEvent): Promise<void> {
    return transaction(this.db, ctx, async (tx) => {
      await tx
        .insertInto("affichage")
        .values({
          organization_id: t.organizationId,
          livemode: t.livemode,
          status: "filed",
          ...a,
          declaration: JSON.stringify(a.declaration),
        })
        .onConflict((oc) =>
          oc.columns(["organization_id", "livemode", "passport_id"]).doUpdateSet((eb) => ({
            filed_at: eb.ref("excluded.filed_at"),
            portal_gtin: eb.ref("excluded.portal_gtin"),
            portal_score: eb.ref("excluded.portal_score"),
            standardized_score: eb.ref("excluded.standardized_score"),
            durability: eb.ref("excluded.durability"),
            engine_version: eb.ref("excluded.engine_version"),
            declaration: eb.ref("excluded.declaration"),
            filings: eb("affichage.filings", "+", 1),
            updated_at: new Date(),
          })),
        )
        .execute();
      await writeOutbox(tx, event);
    });
  }

  recordAttestation(ctx: RequestContext, t: TenantContext, acceptedBy: string, version: string) {
    return singleStatement(this.db, ctx, (q) =>
      q
        .insertInto("attestation")
        .values({
          organization_id: t.organizationId,
          livemode: t.livemode,
          accepted_by: acceptedBy,
          wording_version: version,
        })
        .onConflict((oc) =>
          oc.columns(["organization_id", "livemode"]).doUpdateSet({
            accepted_by: acceptedBy,
            wording_version: version,
            accepted_at: new Date(),
          }),
        )
        .returningAll()
        .executeTakeFirstOrThrow(),
    );
  }
}
