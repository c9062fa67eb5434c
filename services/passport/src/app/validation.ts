/** POST .../validate: what publishing would answer now, as a record; kept unless dry_run. Never changes the passport. */
import { newId, type Issue } from "@dpp/contract";
import { requireTenant, type RequestContext } from "@dpp/kit";
import { findCategory } from "../domain/categories";
import type { PassportApp } from "./deps";
import { findPassport } from "./passport-access";
import { publishBlockers, publishWarnings } from "./publish-conditions";

export interface ValidateInput {
  id: string;
  /** From the optional body: check without keeping the record. */
  dryRun: boolean;
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

export async function validatePassport(
  app: PassportApp,
  ctx: RequestContext,
  input: ValidateInput,
): Promise<ValidationRecord> {
  const { id, dryRun } = input;
  const t = requireTenant(ctx);
  return app.store.transaction(t, async (tx) => {
    const row = await findPassport(tx, t, id);
    const blockers = await publishBlockers(app, tx, ctx, t, row, {}, false);
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
        issues.push({ pointer: b.pointer, rule: b.error.code, severity: "error", message: b.error.message });
    }
    const warnings = publishWarnings(app, row);
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
      await tx.insertValidation(t, {
        id: record.id,
        passport_id: id,
        passport_version: row.version,
        valid: record.valid,
        publishable: record.publishable,
        record,
        checked_at: new Date(record.checked_at),
      });
    return record;
  });
}
