/** Free-form JSON travels as text in a string field (bodies, merge patches); these parse it. */
import { ApiError } from "@dpp/contract";

/** Parses a JSON body; an empty text is `{}`. Not JSON: invalid_request. */
export function parseJsonBody(text: string): unknown {
  try {
    return JSON.parse(text || "{}");
  } catch {
    throw new ApiError("invalid_request", "The request body is not valid JSON.");
  }
}

/** The body of a call that may take none: undefined when empty. */
export function parseOptionalJson(text: string): unknown {
  return text ? parseJsonBody(text) : undefined;
}
