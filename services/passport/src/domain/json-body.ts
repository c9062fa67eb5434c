/** Free-form JSON travels as text in a string field (passport data, merge patches); this parses it. */
import { ApiError } from "@dpp/contract";

/** Parses a JSON document; an empty text is `{}`. Not JSON: invalid_request. */
export function parseJsonBody(text: string): unknown {
  try {
    return JSON.parse(text || "{}");
  } catch {
    throw new ApiError("invalid_request", "The request body is not valid JSON.");
  }
}
