/** Use-case results to protobuf messages (camelCase fields, JSON documents as JSON text). */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { passportV1 } from "@dpp/proto";
import type { CategoryDefinition, HeldClaim, Links, PassportRow, ValidationRecord, Warning } from "../app";

export function passportMessage(r: PassportRow): MessageInitShape<typeof passportV1.PassportSchema> {
  return {
    id: r.id,
    organizationId: r.organization_id,
    category: r.category,
    status: r.status,
    gtin: r.gtin ?? undefined,
    serialNumber: r.serial_number ?? undefined,
    externalId: r.external_id ?? undefined,
    version: r.version,
    livemode: r.livemode,
    registryId: r.registry_id ?? undefined,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
    publishedAt: r.published_at?.toISOString(),
    trashedAt: r.trashed_at?.toISOString(),
    dataJson: JSON.stringify(r.data),
  };
}

export function categoryMessage(c: CategoryDefinition) {
  return {
    id: c.id,
    displayName: c.displayName,
    description: c.description,
    schemaVersion: c.schemaVersion,
    regulations: c.regulations,
  };
}

export function validationMessage(v: ValidationRecord): MessageInitShape<typeof passportV1.ValidationSchema> {
  return {
    id: v.id,
    organizationId: v.organization_id,
    livemode: v.livemode,
    passportId: v.passport_id,
    category: v.category,
    schemaVersion: v.schema_version ?? undefined,
    dryRun: v.dry_run,
    valid: v.valid,
    publishable: v.publishable,
    errorCount: v.error_count,
    warningCount: v.warning_count,
    checkedAt: v.checked_at,
    issues: v.issues,
  };
}

export function warningMessage(w: Warning) {
  return { code: w.code, message: w.message, docUrl: w.doc_url, pointer: w.pointer };
}

export function linksMessage(
  r: PassportRow,
  l: Links,
): MessageInitShape<typeof passportV1.PassportLinksSchema> {
  const dl = l.gs1_digital_link;
  return {
    id: r.id,
    organizationId: r.organization_id,
    status: r.status,
    livemode: r.livemode,
    gtin: r.gtin ?? undefined,
    serialNumber: r.serial_number ?? undefined,
    publicUrl: l.public_url,
    qrTarget: l.qr_target,
    resolvesPublicly: l.resolves_publicly,
    notResolvableReason: l.not_resolvable_reason ?? undefined,
    previewUrl: l.preview_url ?? undefined,
    gs1DigitalLink: {
      uri: dl.uri ?? undefined,
      gtin14: dl.gtin14 ?? undefined,
      serial: dl.serial ?? undefined,
      linksetUrl: dl.linkset_url ?? undefined,
      unavailableReason: dl.unavailable_reason ?? undefined,
    },
  };
}

export function claimMessage(c: HeldClaim) {
  return { gtin: c.gtin, passportId: c.passport_id, ownerId: c.owner_id, role: c.role };
}
