/**
 * The passport state machine (docs/decisions/0009-passport-lifecycle.md). One table: which operation moves a
 * passport from which statuses to which status, with which event; everything else is refused.
 */
import { ApiError, type EventType, type PassportRelated, type RelatedOf } from "@dpp/contract";

/** The catalogued event types whose `related` is a passport. */
export type PassportEventType = {
  [K in EventType]: RelatedOf<K> extends PassportRelated ? K : never;
}[EventType];

export const PASSPORT_STATUSES = ["draft", "published", "deactivated", "trashed", "readonly"] as const;
export type PassportStatus = (typeof PASSPORT_STATUSES)[number];

export type TransitionName =
  "publish" | "unpublish" | "trash" | "restore" | "deactivate" | "reactivate" | "lock" | "unlock";

export interface TransitionRule {
  from: readonly PassportStatus[];
  to: PassportStatus;
  event: PassportEventType;
  /** The code refusing the operation from any other status. */
  refusal: "wrong_status" | "not_trashed";
  /** Reachable through the HTTP API (else an internal gRPC transition for platform operations). */
  api: boolean;
  description: string;
}

export const TRANSITIONS: Readonly<Record<TransitionName, TransitionRule>> = {
  publish: {
    from: ["draft"],
    to: "published",
    event: "passport.published",
    refusal: "wrong_status",
    api: true,
    description: "POST publish, when every publish condition holds.",
  },
  unpublish: {
    from: ["published", "deactivated"],
    to: "draft",
    event: "passport.unpublished",
    refusal: "wrong_status",
    api: true,
    description: "POST unpublish (destructive): taken offline, frees its publish slot; published_at is kept.",
  },
  trash: {
    from: ["draft"],
    to: "trashed",
    event: "passport.trashed",
    refusal: "wrong_status",
    api: true,
    description: "POST trash: only drafts; unpublish a published passport first. GTIN claims are kept.",
  },
  restore: {
    from: ["trashed"],
    to: "draft",
    event: "passport.restored",
    refusal: "not_trashed",
    api: true,
    description: "POST restore: back to draft (the only status a passport can be trashed from).",
  },
  deactivate: {
    from: ["published"],
    to: "deactivated",
    event: "passport.deactivated",
    refusal: "wrong_status",
    api: false,
    description: "Platform operation (e.g. a takedown): offline but still holding its publish slot.",
  },
  reactivate: {
    from: ["deactivated"],
    to: "published",
    event: "passport.reactivated",
    refusal: "wrong_status",
    api: false,
    description: "Platform operation: back online in the slot it kept.",
  },
  lock: {
    from: ["published"],
    to: "readonly",
    event: "passport.locked",
    refusal: "wrong_status",
    api: false,
    description:
      "Platform operation (legal hold, product end of life): online, frozen, no edit or transition.",
  },
  unlock: {
    from: ["readonly"],
    to: "published",
    event: "passport.unlocked",
    refusal: "wrong_status",
    api: false,
    description: "Platform operation: the hold ends; published again.",
  },
};

/** Statuses in which PATCH is allowed (a connector credential: draft only). */
export const EDITABLE_STATUSES: readonly PassportStatus[] = ["draft", "published", "deactivated"];
/** Statuses that occupy one of the plan's publish slots. */
export const PUBLISH_SLOT_STATUSES: readonly PassportStatus[] = ["published", "deactivated", "readonly"];
/** Statuses whose live passports resolve publicly (public page, GS1 Digital Link). */
export const PUBLIC_STATUSES: readonly PassportStatus[] = ["published", "readonly"];

export function isPassportStatus(s: string): s is PassportStatus {
  return (PASSPORT_STATUSES as readonly string[]).includes(s);
}

/** The refusal of a transition from `status`, or undefined when the table allows it. */
export function transitionRefusal(
  name: TransitionName,
  status: string,
  passportId: string,
): ApiError | undefined {
  const rule = TRANSITIONS[name];
  if ((rule.from as readonly string[]).includes(status)) return undefined;
  if (rule.refusal === "not_trashed")
    return new ApiError("not_trashed", `Only a trashed passport can be restored; this one is ${status}.`, {
      passport_id: passportId,
      status,
    });
  return new ApiError("wrong_status", `A ${status} passport cannot be ${pastTense(name)}.`, {
    passport_id: passportId,
    status,
    operation: name,
    allowed_statuses: [...rule.from],
  });
}

/** wrong_status for PATCH on a status that is not editable. */
export function editRefusal(status: string, passportId: string): ApiError | undefined {
  if ((EDITABLE_STATUSES as readonly string[]).includes(status)) return undefined;
  return new ApiError("wrong_status", `A ${status} passport cannot be changed.`, {
    passport_id: passportId,
    status,
    operation: "update",
    allowed_statuses: [...EDITABLE_STATUSES],
  });
}

function pastTense(name: TransitionName): string {
  return {
    publish: "published",
    unpublish: "unpublished",
    trash: "trashed",
    restore: "restored",
    deactivate: "deactivated",
    reactivate: "reactivated",
    lock: "locked",
    unlock: "unlocked",
  }[name];
}
