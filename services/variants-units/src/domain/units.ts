/**
 * The rules of battery units (spec: Units, Unit status; docs/decisions/0051-variants-and-units.md): the create batch,
 * the status machine and its history, and the readings of a unit's fields (Regulation (EU) 2023/1542, Annex VII
 * and Annex XIII point 4: the values of one battery, recorded per serialized unit).
 */
import { ApiError, correctableRefusal, validationFailed, type Issue } from "@dpp/contract";

export const UNIT_STATUSES = ["original", "repurposed", "re-used", "remanufactured", "waste"] as const;
export type UnitStatus = (typeof UNIT_STATUSES)[number];
export const MAX_UNITS_PER_REQUEST = 1000;
export const UNIT_SERIAL_MAX = 70;

export const isUnitStatus = (s: string): s is UnitStatus => (UNIT_STATUSES as readonly string[]).includes(s);

export function statusNotAllowed(value: string, pointer: string): ApiError {
  return new ApiError(
    "unit_status_not_allowed",
    `"${value}" is not a unit status; use one of ${UNIT_STATUSES.join(", ")}.`,
    { allowed: [...UNIT_STATUSES], issues: [{ source: { pointer }, rule: "enum" }] },
  );
}

export interface UnitInput {
  unit_serial: string;
  status?: string;
}

/** Validates a create batch: serials 1 to 70 characters, none twice in the request (refused per row), statuses of the five. */
export function normalizeUnitBatch(
  items: readonly UnitInput[],
): { unit_serial: string; status: UnitStatus | null }[] {
  if (items.length < 1 || items.length > MAX_UNITS_PER_REQUEST)
    throw validationFailed([
      {
        source: { pointer: "/units" },
        rule: items.length < 1 ? "min_items" : "max_items",
        message: `Send 1 to ${MAX_UNITS_PER_REQUEST} units per request.`,
      },
    ]);
  const bad = items.findIndex((u) => u.status !== undefined && !isUnitStatus(u.status));
  if (bad >= 0) throw statusNotAllowed(items[bad]!.status!, `/units/${bad}/status`);
  const issues: Issue[] = [];
  const seen = new Map<string, number>();
  items.forEach((u, i) => {
    const at = `/units/${i}/unit_serial`;
    if (u.unit_serial.length < 1)
      issues.push({ source: { pointer: at }, rule: "required", message: "unit_serial is required." });
    else if ([...u.unit_serial].length > UNIT_SERIAL_MAX)
      issues.push({
        source: { pointer: at },
        rule: "max_length",
        message: `unit_serial has at most ${UNIT_SERIAL_MAX} characters.`,
      });
    else if (seen.has(u.unit_serial))
      issues.push({
        source: { pointer: at },
        rule: "unique_items",
        message: `unit_serial ${u.unit_serial} is also unit ${seen.get(u.unit_serial)} of this request.`,
      });
    else seen.set(u.unit_serial, i);
  });
  if (issues.length) throw validationFailed(issues);
  return items.map((u) => ({
    unit_serial: u.unit_serial,
    status: (u.status as UnitStatus | undefined) ?? null,
  }));
}

/** already_exists, a pointer per serial the passport already has. */
export function serialsTaken(serials: readonly string[], taken: ReadonlySet<string>): ApiError | undefined {
  const items = serials.flatMap((s, i) =>
    taken.has(s)
      ? [
          {
            pointer: `/units/${i}/unit_serial`,
            rule: "unique",
            message: `The passport already has unit ${s}.`,
          },
        ]
      : [],
  );
  if (!items.length) return undefined;
  return correctableRefusal(
    "already_exists",
    "Some unit serials already exist on this passport; nothing was added.",
    items,
    {
      unit_serials: serials.filter((s) => taken.has(s)),
    },
  );
}

export interface StatusChange {
  from_status: string | null;
  to_status: string;
}

/**
 * The status machine: whether `next` may follow the unit's `current` status and its recorded `history` (oldest
 * first). Answers the refusal, or undefined when the change is allowed (or changes nothing: `next` equal to current).
 *
 * - no status → any status; a status never cleared (unit_status_required);
 * - never back to `original` after another status, nothing after `waste` (unit_status_transition_forbidden);
 * - a status the unit already left is not taken again (unit_status_history_conflict): a battery's life goes forward
 *   (repurposed, re-used, remanufactured: each at most once, per the history).
 */
export function statusChangeRefusal(
  current: string | null,
  next: string | null,
  history: readonly StatusChange[],
): ApiError | undefined {
  if (next === null)
    return current === null
      ? undefined
      : new ApiError(
          "unit_status_required",
          `The unit is ${current}; a status cannot be cleared, choose another status.`,
          {
            status: current,
          },
        );
  if (next === current) return undefined;
  if (current === "waste")
    return new ApiError("unit_status_transition_forbidden", "A unit's status cannot change after waste.", {
      from: current,
      to: next,
    });
  if (next === "original" && current !== null)
    return new ApiError(
      "unit_status_transition_forbidden",
      `A unit cannot go back to original after another status (it is ${current}).`,
      { from: current, to: next },
    );
  const left = history.find((h) => h.from_status === next);
  if (left)
    return new ApiError(
      "unit_status_history_conflict",
      `The unit's history shows it already left ${next}; it cannot become ${next} again.`,
      { from: current, to: next, history: history.map((h) => ({ from: h.from_status, to: h.to_status })) },
    );
  return undefined;
}

// ---- readings --------------------------------------------------------------------------------------------------

type FieldRule =
  | { kind: "quantity"; unit: string; min?: number; max?: number; integer?: boolean }
  | { kind: "text_list"; max: number };

/** The battery fields recorded per unit (Annex VII Part A/B, Annex XIII 4): their value shapes. */
export const UNIT_FIELDS: Readonly<Record<string, FieldRule>> = {
  state_of_health: { kind: "quantity", unit: "%", min: 0, max: 100 },
  state_of_charge: { kind: "quantity", unit: "%", min: 0, max: 100 },
  remaining_capacity: { kind: "quantity", unit: "Ah", min: 0 },
  remaining_energy: { kind: "quantity", unit: "kWh", min: 0 },
  remaining_power_capability: { kind: "quantity", unit: "W", min: 0 },
  internal_resistance: { kind: "quantity", unit: "mOhm", min: 0 },
  charge_discharge_cycles: { kind: "quantity", unit: "cycles", min: 0, integer: true },
  energy_throughput: { kind: "quantity", unit: "kWh", min: 0 },
  negative_events: { kind: "text_list", max: 100 },
};
export const UNIT_FIELD_NAMES = Object.keys(UNIT_FIELDS);

/** Where a value comes from. */
export const READING_SOURCES = [
  "brand_statement",
  "measurement",
  "battery_management_system",
  "third_party_test",
] as const;
export const NOTE_MAX = 1000;

export interface ReadingInput {
  field: string;
  value: unknown;
  source: string;
  observed_on: string;
  note: string | null;
  document_id: string | null;
}

const READING_MEMBERS = ["field", "value", "source", "observed_on", "note", "document_id"];

function refuse(
  code:
    | "invalid_input"
    | "invalid_field"
    | "invalid_value"
    | "invalid_source"
    | "invalid_observed_on"
    | "invalid_note"
    | "invalid_document_id",
  message: string,
  pointer: string,
  rule: string,
  extra: Record<string, unknown> = {},
): ApiError {
  return new ApiError(code, message, { ...extra, issues: [{ source: { pointer }, rule, message }] });
}

function isDate(s: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) return false;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
}

/** Validates a reading's body (POST .../units/{unitId}/readings): the first broken rule's code, with its pointer. */
export function parseReading(body: unknown, today: string): ReadingInput {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw refuse("invalid_input", "The body is a JSON object.", "", "type");
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).find((k) => !READING_MEMBERS.includes(k));
  if (unknown !== undefined)
    throw refuse("invalid_input", `Unknown member ${unknown}.`, `/${unknown}`, "unknown_member");
  for (const k of ["field", "value", "source", "observed_on"])
    if (b[k] === undefined || b[k] === null)
      throw refuse("invalid_input", `${k} is required.`, `/${k}`, "required");
  const field = b.field;
  if (typeof field !== "string" || !UNIT_FIELDS[field])
    throw refuse("invalid_field", `field is one of ${UNIT_FIELD_NAMES.join(", ")}.`, "/field", "enum", {
      allowed: UNIT_FIELD_NAMES,
    });
  const rule = UNIT_FIELDS[field]!;
  const value = b.value;
  if (rule.kind === "quantity") {
    const v = value as { value?: unknown; unit?: unknown };
    const ok =
      typeof value === "object" &&
      value !== null &&
      !Array.isArray(value) &&
      Object.keys(value).every((k) => k === "value" || k === "unit") &&
      typeof v.value === "number" &&
      Number.isFinite(v.value) &&
      v.unit === rule.unit &&
      (rule.min === undefined || v.value >= rule.min) &&
      (rule.max === undefined || v.value <= rule.max) &&
      (!rule.integer || Number.isInteger(v.value));
    if (!ok)
      throw refuse(
        "invalid_value",
        `${field} is {"value": <number${rule.min !== undefined ? ` ≥ ${rule.min}` : ""}${rule.max !== undefined ? ` ≤ ${rule.max}` : ""}${rule.integer ? ", whole" : ""}>, "unit": "${rule.unit}"}.`,
        "/value",
        "shape",
        { field, unit: rule.unit },
      );
  } else if (
    !Array.isArray(value) ||
    value.length > rule.max ||
    !value.every((x) => typeof x === "string" && x.trim().length > 0 && x.length <= 1000)
  )
    throw refuse("invalid_value", `${field} is a list of at most ${rule.max} texts.`, "/value", "shape", {
      field,
    });
  const source = b.source;
  if (typeof source !== "string" || !(READING_SOURCES as readonly string[]).includes(source))
    throw refuse("invalid_source", `source is one of ${READING_SOURCES.join(", ")}.`, "/source", "enum", {
      allowed: [...READING_SOURCES],
    });
  const observed = b.observed_on;
  if (typeof observed !== "string" || !isDate(observed))
    throw refuse("invalid_observed_on", "observed_on is a date YYYY-MM-DD.", "/observed_on", "date");
  if (observed > today)
    throw refuse("invalid_observed_on", "observed_on is not in the future.", "/observed_on", "not_future");
  const note = b.note ?? null;
  if (note !== null && (typeof note !== "string" || note.trim().length === 0 || [...note].length > NOTE_MAX))
    throw refuse("invalid_note", `note is a text of 1 to ${NOTE_MAX} characters.`, "/note", "length");
  const doc = b.document_id ?? null;
  if (doc !== null && (typeof doc !== "string" || doc.length < 1 || doc.length > 255))
    throw refuse(
      "invalid_document_id",
      "document_id is an identifier of 1 to 255 characters.",
      "/document_id",
      "identifier",
    );
  return {
    field,
    value,
    source,
    observed_on: observed,
    note: note as string | null,
    document_id: doc as string | null,
  };
}

/** The battery fields of a unit still without a reading. */
export function missingFields(recorded: Iterable<string>): string[] {
  const have = new Set(recorded);
  return UNIT_FIELD_NAMES.filter((f) => !have.has(f));
}
