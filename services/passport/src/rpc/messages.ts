/**
 * The one mapping place between messages and use cases: requests to use-case inputs, results to messages
 * (camelCase fields, JSON documents as JSON text, instants as google.protobuf.Timestamp, statuses and roles as
 * enums).
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { passportV1, timestampDate, timestampFromDate, type Timestamp } from "@dpp/proto";
import type {
  CategoryDefinition,
  Links,
  PassportRow,
  PassportStatus,
  ProposalView,
  PublishApprovalView,
  PublishOutcome,
  ValidationRecord,
  Warning,
} from "../app";

const { PassportStatus: StatusEnum, ValidationSeverity } = passportV1;

const STATUS: Record<PassportStatus, passportV1.PassportStatus> = {
  draft: StatusEnum.DRAFT,
  published: StatusEnum.PUBLISHED,
  deactivated: StatusEnum.DEACTIVATED,
  trashed: StatusEnum.TRASHED,
  readonly: StatusEnum.READONLY,
};

/** A stored status as its enum value; a status the table does not know is a fault, not a value to pass on. */
export function statusMessage(status: string): passportV1.PassportStatus {
  const value = STATUS[status as PassportStatus];
  if (value === undefined) throw new Error(`passport status ${JSON.stringify(status)} has no enum value`);
  return value;
}

/** A status filter of a request: undefined for UNSPECIFIED (no filter). */
export function statusOf(value: passportV1.PassportStatus): PassportStatus | undefined {
  const entry = Object.entries(STATUS).find(([, v]) => v === value);
  return entry?.[0] as PassportStatus | undefined;
}

/** An optional Timestamp of a request as a Date. */
export const dateOf = (t: Timestamp | undefined): Date | undefined => (t ? timestampDate(t) : undefined);

export function passportMessage(r: PassportRow): MessageInitShape<typeof passportV1.PassportSchema> {
  return {
    id: r.id,
    organizationId: r.organization_id,
    category: r.category,
    status: statusMessage(r.status),
    gtin: r.gtin ?? undefined,
    serialNumber: r.serial_number ?? undefined,
    externalId: r.external_id ?? undefined,
    version: r.version,
    livemode: r.livemode,
    registryId: r.registry_id ?? undefined,
    createdAt: timestampFromDate(r.created_at),
    updatedAt: timestampFromDate(r.updated_at),
    publishedAt: r.published_at ? timestampFromDate(r.published_at) : undefined,
    trashedAt: r.trashed_at ? timestampFromDate(r.trashed_at) : undefined,
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
    checkedAt: timestampFromDate(new Date(v.checked_at)),
    issues: v.issues.map((i) => ({
      pointer: i.pointer,
      rule: i.rule,
      severity: i.severity === "error" ? ValidationSeverity.ERROR : ValidationSeverity.WARNING,
      message: i.message,
    })),
  };
}

export function warningMessage(w: Warning) {
  return { code: w.code, message: w.message, docUrl: w.doc_url, pointer: w.pointer };
}

/** A publish's outcome: published with its warnings, or waiting for a person's approval. */
export function publishOutcomeMessage(
  o: PublishOutcome,
): MessageInitShape<typeof passportV1.PublishPassportResponseSchema> {
  if (o.kind === "approval_required")
    return {
      outcome: {
        case: "approvalRequired",
        value: { passportId: o.passportId, approvalId: o.approvalId, reviewUrl: o.reviewUrl },
      },
    };
  return {
    outcome: {
      case: "published",
      value: { passport: passportMessage(o.row), warnings: o.warnings.map(warningMessage) },
    },
  };
}

export function linksMessage(
  r: PassportRow,
  l: Links,
): MessageInitShape<typeof passportV1.PassportLinksSchema> {
  const dl = l.gs1_digital_link;
  return {
    id: r.id,
    organizationId: r.organization_id,
    status: statusMessage(r.status),
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

/** A proposal as its message: fields as JSON text, dates as timestamps. */
export function proposalMessage(p: ProposalView) {
  return {
    id: p.id,
    organizationId: p.organizationId,
    livemode: p.livemode,
    passportId: p.passportId,
    state: p.state,
    moved: p.moved,
    fieldsJson: JSON.stringify(p.fields),
    reviewUrl: p.reviewUrl,
    requestedAt: timestampFromDate(p.requestedAt),
    expiresAt: timestampFromDate(p.expiresAt),
    decidedAt: p.decidedAt ? timestampFromDate(p.decidedAt) : undefined,
    decidedBy: p.decidedBy ?? undefined,
    requestedByKeyId: p.requestedByKeyId ?? undefined,
  };
}

export function publishApprovalMessage(a: PublishApprovalView) {
  return {
    ...a,
    requestedByKeyId: a.requestedByKeyId ?? undefined,
    variantReviewFingerprint: a.variantReviewFingerprint ?? undefined,
    requestedAt: timestampFromDate(a.requestedAt),
    decidedAt: a.decidedAt ? timestampFromDate(a.decidedAt) : undefined,
    decidedBy: a.decidedBy ?? undefined,
  };
}
