/** Reading a request in a handler: query parameters, bodies and conditional headers, the same way everywhere. */
import { ApiError, invalidParameter } from "@dpp/contract";
import type { Conditional } from "./route";

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

/** The body must be a JSON object; anything else is a validation failure at the root. */
export function bodyJson(body: unknown): string {
  if (body === undefined) return "{}";
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw new ApiError("validation_failed", "The request body must be a JSON object.", {
      issues: [{ source: { pointer: "" }, rule: "type", message: "expected an object" }],
    });
  return JSON.stringify(body);
}

/** Lifecycle calls take no body; an empty object is accepted, any member is refused. */
export function noBody(body: unknown): void {
  if (body === undefined) return;
  bodyJson(body);
  const keys = Object.keys(body as object);
  if (keys.length)
    throw new ApiError("validation_failed", "This operation takes no body.", {
      issues: keys.map((k) => ({
        source: { pointer: `/${k.replace(/~/g, "~0").replace(/\//g, "~1")}` },
        rule: "unknown_field",
        message: `${k} is not a field of this body.`,
      })),
    });
}

/** The conditional headers as request fields. */
export function conditionalFields(c: Conditional | undefined) {
  return { expectedVersion: c?.expectedVersion, ifMatchAny: c?.ifMatchAny ?? false };
}
