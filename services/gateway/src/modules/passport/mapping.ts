/** Passport service messages as the public JSON shapes (snake_case, nulls, resource names). */
import type { passportV1 } from "@dpp/proto";
import { orNull, parseJson } from "../../http/json";

export function passportJson(p: passportV1.Passport) {
  return {
    object: "passport" as const,
    id: p.id,
    name: `organizations/${p.organizationId}/passports/${p.id}`,
    organization_id: p.organizationId,
    category: p.category,
    status: p.status,
    gtin: orNull(p.gtin),
    serial_number: orNull(p.serialNumber),
    external_id: orNull(p.externalId),
    version: p.version,
    livemode: p.livemode,
    registry_id: orNull(p.registryId),
    created_at: p.createdAt,
    updated_at: p.updatedAt,
    published_at: orNull(p.publishedAt),
    trashed_at: orNull(p.trashedAt),
    data: parseJson(p.dataJson),
  };
}

/** The publish response: the passport plus `warnings` ({code, message, doc_url, pointer}). */
export function publishedPassportJson(p: passportV1.Passport, warnings: passportV1.Warning[]) {
  return {
    ...passportJson(p),
    warnings: warnings.map((w) => ({
      code: w.code,
      message: w.message,
      doc_url: w.docUrl,
      pointer: w.pointer || null,
    })),
  };
}

export function validationJson(v: passportV1.Validation) {
  return {
    object: "validation" as const,
    id: v.id,
    name: `organizations/${v.organizationId}/passports/${v.passportId}/validations/${v.id}`,
    organization_id: v.organizationId,
    passport_id: v.passportId,
    livemode: v.livemode,
    category: v.category,
    schema_version: orNull(v.schemaVersion),
    dry_run: v.dryRun,
    valid: v.valid,
    publishable: v.publishable,
    error_count: v.errorCount,
    warning_count: v.warningCount,
    checked_at: v.checkedAt,
    issues: v.issues.map((i) => ({
      pointer: i.pointer,
      rule: i.rule,
      severity: i.severity,
      message: i.message,
    })),
  };
}

export function passportLinksJson(l: passportV1.PassportLinks) {
  const dl = l.gs1DigitalLink;
  return {
    object: "passport_links" as const,
    id: l.id,
    name: `organizations/${l.organizationId}/passports/${l.id}/links`,
    organization_id: l.organizationId,
    passport: `organizations/${l.organizationId}/passports/${l.id}`,
    status: l.status,
    livemode: l.livemode,
    gtin: orNull(l.gtin),
    serial_number: orNull(l.serialNumber),
    public_url: l.publicUrl,
    qr_target: l.qrTarget,
    preview_url: orNull(l.previewUrl),
    resolves_publicly: l.resolvesPublicly,
    not_resolvable_reason: orNull(l.notResolvableReason),
    gs1_digital_link: {
      uri: orNull(dl?.uri),
      gtin14: orNull(dl?.gtin14),
      serial: orNull(dl?.serial),
      linkset_url: orNull(dl?.linksetUrl),
      unavailable_reason: orNull(dl?.unavailableReason),
    },
  };
}

export function categoryJson(c: passportV1.Category) {
  return {
    object: "category" as const,
    id: c.id,
    name: `categories/${c.id}`,
    display_name: c.displayName,
    description: c.description,
    schema_version: c.schemaVersion,
    regulations: c.regulations,
  };
}

export function categorySchemaJson(c: passportV1.Category, schemaJson: string) {
  return {
    object: "category_schema" as const,
    id: c.id,
    name: `categories/${c.id}/schema`,
    category: c.id,
    schema_version: c.schemaVersion,
    json_schema: parseJson(schemaJson),
  };
}
