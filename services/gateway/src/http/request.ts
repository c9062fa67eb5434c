/**
 * Reading a request in a handler: query parameters, bodies and conditional headers, the same way everywhere.
 * The edge checks the syntax of what it reads (a body's shape, a limit, a timestamp) so that services receive
 * typed fields; a service checks what needs its data.
 */
import { ApiError, invalidParameter, pointerToken, validationFailed, type Issue } from "@dpp/contract";
import type { Conditional } from "./middleware/locals";

/** A single-valued query parameter ("" when absent); repeating it is refused. */
export function single(query: Record<string, unknown>, name: string): string {
  const v = query[name];
  if (v === undefined) return "";
  if (typeof v !== "string") throw invalidParameter(name, "single_value", `${name} may be given once.`);
  return v;
}

/** A repeatable query parameter, every value in order. */
export function many(query: Record<string, unknown>, name: string): string[] {
  const v = query[name];
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).map(String);
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** An RFC 3339 timestamp (with its offset, on a day the month has), or undefined. */
export function parseRfc3339(text: string): Date | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const calendar = new Date(Date.UTC(year, month - 1, day));
  if (calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day) return undefined;
  const at = new Date(text);
  return Number.isNaN(at.getTime()) ? undefined : at;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** The body as an object ({} when none was sent); anything else is a validation failure at the root. */
export function bodyObject(body: unknown): Record<string, unknown> {
  if (body === undefined) return {};
  if (!isObject(body))
    throw new ApiError("validation_failed", "The request body must be a JSON object.", {
      issues: [{ source: { pointer: "" }, rule: "type", message: "expected an object" }],
    });
  return body;
}

/** unknown_field issues for the members of `body` that are not in `known`, in the body's order. */
export function unknownMembers(body: Record<string, unknown>, known: readonly string[]): Issue[] {
  return Object.keys(body)
    .filter((key) => !known.includes(key))
    .map((key) => ({
      source: { pointer: `/${pointerToken(key)}` },
      rule: "unknown_field",
      message: `${key} is not a field of this body.`,
    }));
}

/** Lifecycle calls take no body; an empty object is accepted, any member is refused. */
export function noBody(body: unknown): void {
  if (body === undefined) return;
  const issues = unknownMembers(bodyObject(body), []);
  if (issues.length) throw new ApiError("validation_failed", "This operation takes no body.", { issues });
}

/** The conditional headers as request fields. */
export function conditionalFields(c: Conditional | undefined) {
  return { expectedVersion: c?.expectedVersion };
}

/** The body member an issue points into ("" for the root or a member not in `members`). */
function memberOf(issue: Issue, members: readonly string[]): string {
  const token = "pointer" in issue.source ? (issue.source.pointer.split("/")[1] ?? "") : "";
  return members.includes(token) ? token : "";
}

/**
 * The refusal of a body whose shape the edge refused (`edge`, unknown members first, then by member), completed
 * with what the service says of the members that passed: `check` asks the service to check without writing.
 * Issues are listed member by member in the order of `members`, each member's from the edge when it refused it,
 * else the service's; so the answer is the one a single check of the whole body gives. A refusal the service
 * makes before looking at the body (a plan, the tenant) is answered instead. Issues the service found but did not
 * list (details.total_issues) are counted when its issues are.
 */
export async function bodyRefusal(
  edge: Issue[],
  members: readonly string[],
  check: () => Promise<unknown>,
): Promise<ApiError> {
  let service: Issue[] = [];
  let unlisted = 0;
  try {
    await check();
  } catch (err) {
    if (!(err instanceof ApiError) || err.code !== "validation_failed") throw err;
    service = (err.details.issues as Issue[] | undefined) ?? [];
    const total = err.details.total_issues;
    if (typeof total === "number" && total > service.length) unlisted = total - service.length;
  }
  const issues = [...edge.filter((i) => memberOf(i, members) === "")];
  let serviceListed = false;
  for (const member of members) {
    const mine = edge.filter((i) => memberOf(i, members) === member);
    const theirs = mine.length ? [] : service.filter((i) => memberOf(i, members) === member);
    if (theirs.length) serviceListed = true;
    issues.push(...(mine.length ? mine : theirs));
  }
  return validationFailed(issues, undefined, issues.length + (serviceListed ? unlisted : 0));
}
