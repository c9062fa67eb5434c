/** The rules of a import: what a create may hold. No SQL, no gRPC. */
import { ApiError, type Issue } from "@dpp/contract";

/** The label of a create, trimmed; validation_failed naming /label when it is empty or too long. */
export function checkLabel(label: string, maxLength: number): string {
  const text = label.trim();
  const issues: Issue[] = [];
  if (text === "")
    issues.push({ source: { pointer: "/label" }, rule: "required", message: "label is required." });
  else if (text.length > maxLength)
    issues.push({
      source: { pointer: "/label" },
      rule: "max_length",
      message: `label is longer than ${maxLength}.`,
    });
  if (issues.length) throw new ApiError("validation_failed", "The import cannot be created.", { issues });
  return text;
}
