/**
 * The passport use cases that write: merge-patch updates, lifecycle transitions, publish, validation records,
 * GTIN claims for other services, usage counts. Each write is one transaction that locks the passport row,
 * checks Expected-Version against the locked row, writes with `WHERE version = <read>` and records its event in
 * the outbox; a refusal rolls everything back. Rules live in src/domain; SQL stays in this file and the repository.
 */
import { sql, type Kysely, type Transaction } from "kysely";
import {
  ApiError,
  isUniqueViolation,
  lockKey,
  newId,
  requireTenant,
  validationFailed,
  type Issue,
  type RequestContext,
  type TenantContext,
} from "@dpp/kit";
import type { PassportDB } from "./store/schema";
import type { PassportRepository, PassportRow } from "./store/passports.repository";
import { findCategory } from "./domain/categories";
import { publishIssues, validatePassportData } from "./domain/validate";
import { normalizeGtin } from "./domain/gtin";
import {
  PUBLISH_SLOT_STATUSES,
  TRANSITIONS,
  editRefusal,
  transitionRefusal,
  type TransitionName,
} from "./domain/lifecycle";
import { liveWriteRefusal } from "./domain/plan-rules";
import { applyPassportPatch, type PassportPatch } from "./domain/update-passport";
import { detectEnvironmentalClaims, findingMessage } from "./domain/environmental-claims";
import { passportLinks, type LinkHosts, type Links } from "./domain/links";
import type { PrePublishCheck, PrePublishInput } from "./domain/prepublish";

export interface PassportsOptions {
  hosts: LinkHosts;
  reviewBaseUrl: string;
  docsBaseUrl: string;
  checks: PrePublishCheck;
  /** Called after a transaction that wrote events committed (wakes the outbox relay). */
  onCommitted: () => void;
}

export interface Warning {
  code: string;
  message: string;
  doc_url: string;
  pointer: string;
}

export interface ValidationIssue {
  pointer: string;
  rule: string;
  severity: "error" | "warning";
  message: string;
}

export interface ValidationRecord {
  id: string;
  organization_id: string;
  livemode: boolean;
  passport_id: string;
  category: string;
  schema_version: string | null;
  dry_run: boolean;
  valid: boolean;
  publishable: boolean;
  error_count: number;
  warning_count: number;
  checked_at: string;
  issues: ValidationIssue[];
}

export interface ClaimInput {
  gtin: string;
  passport_id: string;
  owner_id: string;
}

export interface HeldClaim {
  gtin: string;
  passport_id: string;
  owner_id: string;
  role: "lead" | "variant";
}

/** A reason publishing is blocked, with where in the passport it points (for the validation record). */
interface Blocker {
  error: ApiError;
  pointer: string;
  /** The stored document itself is invalid (the record's `valid`). */
  schema?: boolean;
}

const MAX_GTIN_BATCH = 1000;
const passportName = (t: TenantContext, id: string) => `organizations/${t.organizationId}/passports/${id}`;

export class Passports {
  constructor(
    private readonly db: Kysely<PassportDB>,
    private readonly repo: PassportRepository,
    private readonly o: PassportsOptions,
  ) {}

  // --- reads ------------------------------------------------------------------------------------------------

  async links(ctx: RequestContext, id: string): Promise<{ row: PassportRow; links: Links }> {
    const t = requireTenant(ctx);
    const row = await this.mustGet(t, id);
    return { row, links: passportLinks(row, this.o.hosts) };
  }

  /** Publish slots used (published, deactivated, readonly) and passports held (not trashed), in the context's mode. */
  async usage(ctx: RequestContext): Promise<{ publishedCount: number; passportCount: number }> {
    const t = requireTenant(ctx);
    const { rows } = await sql<{ published: number; held: number }>`
      select count(*) filter (where status in (${sql.join([...PUBLISH_SLOT_STATUSES])}))::int as published,
             count(*) filter (where status <> 'trashed')::int as held
      from passport where organization_id = ${t.organizationId} and livemode = ${t.livemode}`.execute(
      this.db,
    );
    return { publishedCount: rows[0]?.published ?? 0, passportCount: rows[0]?.held ?? 0 };
  }

  // --- PATCH ------------------------------------------------------------------------------------------------

  async update(
    ctx: RequestContext,
    id: string,
    patch: PassportPatch,
    expectedVersion?: number,
  ): Promise<PassportRow> {
    const t = requireTenant(ctx);
    throwIf(liveWriteRefusal(ctx));
    try {
      const { row, wrote } = await this.db.transaction().execute(async (trx) => {
        const current = await this.lockRow(trx, t, id);
        checkVersion(current, expectedVersion);
        throwIf(editRefusal(current.status, id));
        if (ctx.credentialKind === "connector" && current.status !== "draft")
          throw new ApiError(
            "connector_writes_drafts_only",
            `A connector may only change drafts; this passport is ${current.status}. A person can make the change.`,
            { passport_id: id, status: current.status, review_url: this.passportReviewUrl(t, id) },
          );
        const next = applyPassportPatch(current, patch);
        if (!next.changed) return { row: current, wrote: false };
        if (next.gtin !== current.gtin) {
          if (current.gtin)
            await trx
              .deleteFrom("gtin_claim")
              .where("organization_id", "=", t.organizationId)
              .where("livemode", "=", t.livemode)
              .where("gtin", "=", current.gtin)
              .where("passport_id", "=", id)
              .where("role", "=", "lead")
              .execute();
          if (next.gtin) await this.repo.claimGtin(trx, t, next.gtin, id, "lead", id);
        }
        const updated = await this.repo.applyChange(
          trx,
          t,
          current,
          {
            data: JSON.stringify(next.data),
            gtin: next.gtin,
            serial_number: next.serialNumber,
            external_id: next.externalId,
          },
          "passport.updated",
        );
        if (!updated) throw preconditionFailed(current.version, expectedVersion);
        return { row: updated, wrote: true };
      });
      if (wrote) this.o.onCommitted();
      return row;
    } catch (err) {
      if (isUniqueViolation(err, "passport_external_id_uq"))
        throw new ApiError("already_exists", "Another passport has this external_id.", {
          external_id: patch.externalId ?? null,
          issues: [{ source: { pointer: "/external_id" }, rule: "unique" }],
        });
      throw err;
    }
  }

  // --- lifecycle --------------------------------------------------------------------------------------------

  /**
   * unpublish, trash, restore (API) and deactivate, reactivate, lock, unlock (platform operations). API
   * transitions are live writes subject to the plan; platform operations are not (they may be the plan's doing).
   */
  async transition(
    ctx: RequestContext,
    id: string,
    name: Exclude<TransitionName, "publish">,
    expectedVersion?: number,
  ): Promise<PassportRow> {
    const t = requireTenant(ctx);
    const rule = TRANSITIONS[name];
    if (rule.api) throwIf(liveWriteRefusal(ctx));
    const row = await this.db.transaction().execute(async (trx) => {
      const current = await this.lockRow(trx, t, id);
      checkVersion(current, expectedVersion);
      throwIf(transitionRefusal(name, current.status, id));
      if (name === "unpublish" && ctx.credentialKind === "connector")
        throw new ApiError(
          "connector_writes_drafts_only",
          "A connector cannot take a passport offline; a person can unpublish it.",
          { passport_id: id, status: current.status, review_url: this.passportReviewUrl(t, id) },
        );
      const updated = await this.repo.applyChange(
        trx,
        t,
        current,
        { status: rule.to, trashed_at: rule.to === "trashed" ? sql<Date>`now()` : null },
        rule.event,
      );
      if (!updated) throw preconditionFailed(current.version, expectedVersion);
      return updated;
    });
    this.o.onCommitted();
    return row;
  }

  async publish(
    ctx: RequestContext,
    id: string,
    input: PrePublishInput,
    expectedVersion?: number,
  ): Promise<{ row: PassportRow; warnings: Warning[] }> {
    const t = requireTenant(ctx);
    const outcome = await this.db.transaction().execute(async (trx) => {
      const current = await this.lockRow(trx, t, id);
      checkVersion(current, expectedVersion);
      const blockers = await this.blockers(trx, ctx, t, current, input, true);
      if (blockers[0]) throw blockers[0].error;
      if (ctx.credentialKind === "connector") {
        const approvalId = newId("pa");
        await trx
          .insertInto("publish_approval")
          .values({
            organization_id: t.organizationId,
            livemode: t.livemode,
            id: approvalId,
            passport_id: id,
            passport_version: current.version,
            requested_by_key_id: ctx.keyId ?? null,
            variant_review_fingerprint: input.variantReviewFingerprint ?? null,
          })
          .execute();
        return { approvalId } as const;
      }
      if (current.gtin) await this.repo.claimGtin(trx, t, current.gtin, id, "lead", id);
      const updated = await this.repo.applyChange(
        trx,
        t,
        current,
        { status: "published", published_at: sql<Date>`now()` },
        "passport.published",
      );
      if (!updated) throw preconditionFailed(current.version, expectedVersion);
      return { row: updated } as const;
    });
    if ("approvalId" in outcome) {
      const reviewUrl = `${this.o.reviewBaseUrl}/organizations/${encodeURIComponent(t.organizationId)}/publish-approvals/${outcome.approvalId}`;
      throw new ApiError(
        "human_approval_required",
        "A connector asked to publish: a person at the organization must approve it. Nothing was published.",
        { passport_id: id, approval_id: outcome.approvalId, review_url: reviewUrl },
      );
    }
    this.o.onCommitted();
    return { row: outcome.row, warnings: this.warnings(outcome.row) };
  }

  // --- validation -------------------------------------------------------------------------------------------

  /** What publishing would answer now, as a record; kept unless dry_run. Never changes the passport. */
  async validate(ctx: RequestContext, id: string, dryRun: boolean): Promise<ValidationRecord> {
    const t = requireTenant(ctx);
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom("passport")
        .selectAll()
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", t.livemode)
        .where("id", "=", id)
        .executeTakeFirst();
      if (!row) throw notFound(id);
      const blockers = await this.blockers(trx, ctx, t, row, {}, false);
      const issues: ValidationIssue[] = [];
      for (const b of blockers) {
        const inner = b.error.code === "validation_failed" ? (b.error.details.issues as Issue[]) : undefined;
        if (inner)
          for (const i of inner)
            issues.push({
              pointer: "pointer" in i.source ? i.source.pointer : "",
              rule: i.rule,
              severity: "error",
              message: i.message ?? b.error.message,
            });
        else
          issues.push({
            pointer: b.pointer,
            rule: b.error.code,
            severity: "error",
            message: b.error.message,
          });
      }
      const warnings = this.warnings(row);
      for (const w of warnings)
        issues.push({ pointer: w.pointer, rule: w.code, severity: "warning", message: w.message });
      const category = findCategory(row.category);
      const record: ValidationRecord = {
        id: newId("val"),
        organization_id: t.organizationId,
        livemode: t.livemode,
        passport_id: id,
        category: row.category,
        schema_version: category?.schemaVersion ?? null,
        dry_run: dryRun,
        valid: !blockers.some((b) => b.schema),
        publishable: blockers.length === 0,
        error_count: issues.filter((i) => i.severity === "error").length,
        warning_count: warnings.length,
        checked_at: new Date().toISOString(),
        issues,
      };
      if (!dryRun)
        await trx
          .insertInto("validation")
          .values({
            organization_id: t.organizationId,
            livemode: t.livemode,
            id: record.id,
            passport_id: id,
            passport_version: row.version,
            valid: record.valid,
            publishable: record.publishable,
            record: JSON.stringify(record),
            checked_at: new Date(record.checked_at),
          })
          .execute();
      return record;
    });
  }

  /**
   * Every condition of publishing, in the order publish reports them (the first one is the refusal). validate
   * lists them all, so `publishable` is exactly "publish would succeed" (for a secret key; a connector's publish
   * additionally waits for a person).
   */
  private async blockers(
    trx: Transaction<PassportDB>,
    ctx: RequestContext,
    t: TenantContext,
    row: PassportRow,
    input: PrePublishInput,
    publishing: boolean,
  ): Promise<Blocker[]> {
    const out: Blocker[] = [];
    const plan = liveWriteRefusal(ctx);
    if (plan) out.push({ error: plan, pointer: "" });
    const status = transitionRefusal("publish", row.status, row.id);
    if (status) out.push({ error: status, pointer: "/status" });
    const schemaIssues = validatePassportData(row.category, row.data);
    if (schemaIssues.length)
      out.push({ error: validationFailed(schemaIssues), pointer: "/data", schema: true });
    if (!row.gtin)
      out.push({
        error: new ApiError("gtin_required", "A GTIN is required before publishing; set data.gtin.", {
          passport_id: row.id,
          issues: [{ source: { pointer: "/data/gtin" }, rule: "required" }],
        }),
        pointer: "/data/gtin",
      });
    const missing = publishIssues(row.category, row.data);
    if (missing.length)
      out.push({
        error: validationFailed(
          missing,
          `${missing.length} field${missing.length === 1 ? " is" : "s are"} required before publishing.`,
        ),
        pointer: "/data",
      });
    if (row.gtin) {
      const holder = await this.repo.gtinHolder(trx, t, row.gtin);
      if (holder && holder.passport_id !== row.id)
        out.push({ error: this.repo.gtinInUse(t, row.gtin, holder, "/data/gtin"), pointer: "/data/gtin" });
    }
    if (publishing && out.length) return out;
    const refusal = await this.o.checks.check(t, row, input);
    if (refusal) {
      const first = (refusal.details.issues as Issue[] | undefined)?.[0];
      out.push({ error: refusal, pointer: first && "pointer" in first.source ? first.source.pointer : "" });
    }
    const limit = ctx.plan?.publishLimit;
    if (limit !== undefined && row.status === "draft") {
      // Serialises publishes of one tenant so two cannot take the last slot.
      if (publishing)
        await sql`select pg_advisory_xact_lock(${lockKey(`publish-slots:${t.organizationId}:${t.livemode}`)})`.execute(
          trx,
        );
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from passport
        where organization_id = ${t.organizationId} and livemode = ${t.livemode}
          and status in (${sql.join([...PUBLISH_SLOT_STATUSES])})`.execute(trx);
      const used = rows[0]?.n ?? 0;
      if (used >= limit)
        out.push({
          error: new ApiError(
            "publish_limit_reached",
            `All ${limit} publish slots of the ${ctx.plan?.planId} plan are used; unpublish a passport or change plan.`,
            { limit, published_count: used, plan_id: ctx.plan?.planId ?? null },
          ),
          pointer: "",
        });
    }
    return out;
  }

  private warnings(row: PassportRow): Warning[] {
    return detectEnvironmentalClaims(row.category, row.data).map((f) => ({
      code: "environmental_claim_detected",
      message: findingMessage(f),
      doc_url: `${this.o.docsBaseUrl}#environmental_claim_detected`,
      pointer: f.pointer,
    }));
  }

  // --- GTIN claims (for the variants service) -------------------------------------------------------------

  /** Claims variant GTINs, all or none. A GTIN already held by the same owner, or the passport's own lead, is kept. */
  async claimGtins(ctx: RequestContext, claims: ClaimInput[]): Promise<HeldClaim[]> {
    const t = requireTenant(ctx);
    const normalized = normalizeBatch(claims, "claims", true);
    const held = await this.db.transaction().execute(async (trx) => {
      const passportIds = [...new Set(normalized.map((c) => c.passport_id))];
      const found = await trx
        .selectFrom("passport")
        .select("id")
        .where("organization_id", "=", t.organizationId)
        .where("livemode", "=", t.livemode)
        .where("id", "in", passportIds)
        .execute();
      const missing = passportIds.find((p) => !found.some((f) => f.id === p));
      if (missing) throw notFound(missing);
      await trx
        .insertInto("gtin_claim")
        .values(
          normalized.map((c) => ({
            organization_id: t.organizationId,
            livemode: t.livemode,
            gtin: c.gtin,
            passport_id: c.passport_id,
            role: "variant" as const,
            owner_id: c.owner_id,
          })),
        )
        .onConflict((oc) => oc.columns(["organization_id", "livemode", "gtin"]).doNothing())
        .execute();
      const rows = await trx
        .selectFrom("gtin_claim as c")
        .leftJoin("passport as p", (j) =>
          j
            .onRef("p.organization_id", "=", "c.organization_id")
            .onRef("p.livemode", "=", "c.livemode")
            .onRef("p.id", "=", "c.passport_id"),
        )
        .select([
          "c.gtin",
          "c.passport_id",
          "c.owner_id",
          "c.role",
          sql<string | null>`p.data->>'product_name'`.as("product_name"),
        ])
        .where("c.organization_id", "=", t.organizationId)
        .where("c.livemode", "=", t.livemode)
        .where(
          "c.gtin",
          "in",
          normalized.map((c) => c.gtin),
        )
        .execute();
      const byGtin = new Map(rows.map((r) => [r.gtin, r]));
      const out: HeldClaim[] = [];
      const conflicts: Record<string, unknown>[] = [];
      normalized.forEach((c, i) => {
        const h = byGtin.get(c.gtin)!;
        const ownLead = h.role === "lead" && h.passport_id === c.passport_id;
        const same = h.passport_id === c.passport_id && h.owner_id === c.owner_id;
        if (ownLead || same)
          out.push({ gtin: h.gtin, passport_id: h.passport_id, owner_id: h.owner_id, role: h.role });
        else
          conflicts.push({
            index: i,
            gtin: c.gtin,
            passport: passportName(t, h.passport_id),
            passport_id: h.passport_id,
            product_name: h.product_name,
            role: h.role,
          });
      });
      if (conflicts.length) {
        const first = conflicts[0]!;
        throw new ApiError("gtin_in_use", `GTIN ${String(first.gtin)} belongs to another passport.`, {
          ...first,
          conflicts,
          issues: conflicts.map((c) => ({
            source: { pointer: `/claims/${String(c.index)}/gtin` },
            rule: "gtin_in_use",
          })),
        });
      }
      return out;
    });
    return held;
  }

  /** Releases variant claims held by the given owners; returns which GTINs were released and which were not held. */
  async releaseGtins(
    ctx: RequestContext,
    releases: { gtin: string; owner_id: string }[],
  ): Promise<{ released: string[]; absent: string[] }> {
    const t = requireTenant(ctx);
    const normalized = normalizeBatch(
      releases.map((r) => ({ ...r, passport_id: "" })),
      "releases",
      false,
    );
    const deleted = await sql<{ gtin: string }>`
      delete from gtin_claim c using unnest(${normalized.map((r) => r.gtin)}::text[], ${normalized.map((r) => r.owner_id)}::text[]) as r(gtin, owner_id)
      where c.organization_id = ${t.organizationId} and c.livemode = ${t.livemode} and c.role = 'variant'
        and c.gtin = r.gtin and c.owner_id = r.owner_id
      returning c.gtin`.execute(this.db);
    const released = new Set(deleted.rows.map((r) => r.gtin));
    return {
      released: normalized.filter((r) => released.has(r.gtin)).map((r) => r.gtin),
      absent: normalized.filter((r) => !released.has(r.gtin)).map((r) => r.gtin),
    };
  }

  // --- helpers ----------------------------------------------------------------------------------------------

  private async mustGet(t: TenantContext, id: string): Promise<PassportRow> {
    const row = id.length <= 255 ? await this.repo.get(t, id) : undefined;
    if (!row) throw notFound(id);
    return row;
  }

  private async lockRow(trx: Transaction<PassportDB>, t: TenantContext, id: string): Promise<PassportRow> {
    const row = id.length <= 255 ? await this.repo.lockForUpdate(trx, t, id) : undefined;
    if (!row) throw notFound(id);
    return row;
  }

  private passportReviewUrl(t: TenantContext, id: string): string {
    return `${this.o.reviewBaseUrl}/organizations/${encodeURIComponent(t.organizationId)}/passports/${encodeURIComponent(id)}`;
  }
}

function throwIf(err: ApiError | undefined): void {
  if (err) throw err;
}

function notFound(id: string): ApiError {
  return new ApiError("resource_not_found", `No passport ${id}.`, { passport_id: id });
}

function checkVersion(row: PassportRow, expected: number | undefined): void {
  if (expected !== undefined && row.version !== expected) throw preconditionFailed(row.version, expected);
}

function preconditionFailed(current: number, expected: number | undefined): ApiError {
  return new ApiError(
    "precondition_failed",
    `The passport changed since version ${expected ?? "read"}; it is at version ${current}. Read it again and retry with a new Idempotency-Key.`,
    { current_version: current, expected_version: expected ?? null },
  );
}

/** Validates a claim or release batch: 1..1000 items, GTINs normalised to 14 digits, owners given, no GTIN twice. */
function normalizeBatch(items: ClaimInput[], member: string, needPassport: boolean): ClaimInput[] {
  const issues: Issue[] = [];
  if (items.length < 1 || items.length > MAX_GTIN_BATCH)
    throw validationFailed([
      {
        source: { pointer: `/${member}` },
        rule: items.length < 1 ? "min_items" : "max_items",
        message: `Send 1 to ${MAX_GTIN_BATCH} items.`,
      },
    ]);
  const seen = new Map<string, number>();
  const out = items.map((c, i) => {
    const gtin = normalizeGtin(c.gtin);
    if (!gtin)
      issues.push({
        source: { pointer: `/${member}/${i}/gtin` },
        rule: /^(\d{8}|\d{12}|\d{13}|\d{14})$/.test(c.gtin) ? "gtin_check_digit" : "pattern",
        message: "A GTIN has 8, 12, 13 or 14 digits with a correct check digit.",
      });
    else if (seen.has(gtin))
      issues.push({
        source: { pointer: `/${member}/${i}/gtin` },
        rule: "unique_items",
        message: `GTIN ${gtin} is also item ${seen.get(gtin)}.`,
      });
    else seen.set(gtin, i);
    if (!c.owner_id || c.owner_id.length > 255)
      issues.push({
        source: { pointer: `/${member}/${i}/owner_id` },
        rule: "required",
        message: "owner_id is required.",
      });
    if (needPassport && (!c.passport_id || c.passport_id.length > 255))
      issues.push({
        source: { pointer: `/${member}/${i}/passport_id` },
        rule: "required",
        message: "passport_id is required.",
      });
    return { ...c, gtin: gtin ?? c.gtin };
  });
  if (issues.length) throw validationFailed(issues);
  return out;
}
