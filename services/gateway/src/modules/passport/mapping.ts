/**
 * Passport service messages as the public JSON shapes (snake_case, nulls, resource names), and the one place
 * where the spec's strings meet the enums of the messages (statuses, severities).
 */
import { ApiError, invalidParameter } from "@dpp/contract";
import { passportV1 } from "@dpp/proto";
import { orNull, parseJson, RawJson, rfc3339, rfc3339OrNull, withRawField } from "../../http/json";

const { PassportStatus, ValidationSeverity } = passportV1;

/** The spec's passport statuses, in the spec's order, and their enum values. */
const STATUSES: readonly (readonly [string, passportV1.PassportStatus])[] = [
  ["draft", PassportStatus.DRAFT],
  ["published", PassportStatus.PUBLISHED],
  ["deactivated", PassportStatus.DEACTIVATED],
  ["trashed", PassportStatus.TRASHED],
  ["readonly", PassportStatus.READONLY],
];

export function statusJson(status: passportV1.PassportStatus): string {
  const entry = STATUSES.find(([, value]) => value === status);
  if (!entry) throw new Error(`passport status ${status} has no name`);
  return entry[0];
}

/** The `status` query filter: unspecified when empty; a name the spec does not have is refused. */
export function statusFilter(text: string): passportV1.PassportStatus {
  if (text === "") return PassportStatus.UNSPECIFIED;
  const entry = STATUSES.find(([name]) => name === text);
  if (!entry)
    throw invalidParameter(
      "status",
      "enum",
      `status must be one of ${STATUSES.map(([name]) => name).join(", ")}.`,
    );
  return entry[1];
}

function severityJson(severity: passportV1.ValidationSeverity): "error" | "warning" {
  if (severity === ValidationSeverity.ERROR) return "error";
  if (severity === ValidationSeverity.WARNING) return "warning";
  throw new Error(`validation severity ${severity} has no name`);
}

/** A passport's members before `data`, in the order of the public shape. */
function passportFields(p: passportV1.Passport) {
  return {
    object: "passport" as const,
    id: p.id,
    name: `organizations/${p.organizationId}/passports/${p.id}`,
    organization_id: p.organizationId,
    category: p.category,
    status: statusJson(p.status),
    gtin: orNull(p.gtin),
    serial_number: orNull(p.serialNumber),
    external_id: orNull(p.externalId),
    version: p.version,
    livemode: p.livemode,
    registry_id: orNull(p.registryId),
    created_at: rfc3339(p.createdAt),
    updated_at: rfc3339(p.updatedAt),
    published_at: rfc3339OrNull(p.publishedAt),
    trashed_at: rfc3339OrNull(p.trashedAt),
  };
}

export function passportJson(p: passportV1.Passport) {
  return { ...passportFields(p), data: parseJson(p.dataJson) };
}

/**
 * The JSON text of `passportJson(p)`, the document's `data` placed as the service sent it: the service renders it
 * with JSON.stringify, so the text is the one parsing and rendering it again would give, without doing either.
 */
export function passportText(p: passportV1.Passport): RawJson {
  return withRawField(passportFields(p), "data", p.dataJson || "{}");
}

/** The publish response: the passport plus `warnings` ({code, message, doc_url, pointer}). */
export function publishedPassportJson({ passport, warnings }: passportV1.PassportPublished) {
  return {
    ...passportJson(passport!),
    warnings: warnings.map((w) => ({
      code: w.code,
      message: w.message,
      doc_url: w.docUrl,
      pointer: w.pointer || null,
    })),
  };
}

/**
 * A connector's publish that a person must approve: the spec answers it 202 human_approval_required, in the
 * error envelope (the one place that builds envelopes), with details.review_url.
 */
export function approvalRequired(a: passportV1.PublishApprovalRequired): ApiError {
  return new ApiError(
    "human_approval_required",
    "A connector asked to publish: a person at the organization must approve it. Nothing was published.",
    { passport_id: a.passportId, approval_id: a.approvalId, review_url: a.reviewUrl },
  );
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
    checked_at: rfc3339(v.checkedAt),
    issues: v.issues.map((i) => ({
      pointer: i.pointer,
      rule: i.rule,
      severity: severityJson(i.severity),
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
    status: statusJson(l.status),
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

/**
 * The fields of a category schema that can carry an attached file, each naming its `document_id_key`: the companion
 * `data` key that holds the id of a document attached to the passport (spec: Passport, `data`). Read from the
 * schema's `x-document-id-key` annotations, so the two cannot differ.
 */
export function documentFields(jsonSchema: unknown) {
  const properties = (jsonSchema as { properties?: Record<string, Record<string, unknown>> } | null)
    ?.properties;
  return Object.entries(properties ?? {})
    .filter(([, f]) => typeof f["x-document-id-key"] === "string")
    .map(([field, f]) => ({
      field,
      document_id_key: f["x-document-id-key"] as string,
      required_for_publish: f["x-required-for-publish"] === true,
      access_tier: (f["x-access-tier"] as string | undefined) ?? "public",
    }));
}

export function categorySchemaJson(c: passportV1.Category, schemaJson: string) {
  const jsonSchema = parseJson(schemaJson);
  return {
    object: "category_schema" as const,
    id: c.id,
    name: `categories/${c.id}/schema`,
    category: c.id,
    schema_version: c.schemaVersion,
    document_fields: documentFields(jsonSchema),
    json_schema: jsonSchema,
  };
}

/** A change proposal as the spec's passport_proposal. */
export function proposalJson(p: passportV1.Proposal) {
  return {
    object: "passport_proposal" as const,
    id: p.id,
    name: `organizations/${p.organizationId}/proposals/${p.id}`,
    passport_id: p.passportId,
    state: p.state,
    moved: p.moved,
    fields: parseJson(p.fieldsJson),
    review_url: p.reviewUrl,
    requested_at: rfc3339(p.requestedAt),
    expires_at: rfc3339(p.expiresAt),
    decided_at: rfc3339OrNull(p.decidedAt),
    livemode: p.livemode,
  };
}
