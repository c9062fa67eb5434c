/** The rules of a document: its enumerations, the upload body's checks, and the magic-number check of its bytes. */
import { ApiError, type Issue } from "@dpp/contract";

export const DOCUMENT_TYPES = ["certification", "image", "document", "conformity_declaration"] as const;
export const ACCESS_TIERS = ["public", "restricted", "authority"] as const;
export const MIME_TYPES = ["application/pdf", "image/png", "image/jpeg", "image/webp"] as const;
/** The spec's file_size limit and upload.max_bytes. */
export const MAX_BYTES = 10_485_760;
export const NAME_MAX_LENGTH = 255;

export interface UploadInput {
  type: string;
  accessTier: string;
  fileName: string;
  mimeType: string;
  /** 0: not declared. */
  fileSize: number;
  displayName: string;
}

const oneOf = (list: readonly string[], v: string) => list.includes(v);

/** The form B body's rules; every problem at once, as `validation_failed` issues. */
export function checkUpload(u: UploadInput): UploadInput {
  const issues: Issue[] = [];
  const enumIssue = (field: string, list: readonly string[], v: string) => {
    if (!v)
      issues.push({ source: { pointer: `/${field}` }, rule: "required", message: `${field} is required.` });
    else if (!oneOf(list, v))
      issues.push({
        source: { pointer: `/${field}` },
        rule: "enum",
        message: `${field} must be one of ${list.join(", ")}.`,
      });
  };
  enumIssue("type", DOCUMENT_TYPES, u.type);
  enumIssue("access_tier", ACCESS_TIERS, u.accessTier);
  enumIssue("mime_type", MIME_TYPES, u.mimeType);
  const fileName = u.fileName.trim();
  if (!fileName)
    issues.push({ source: { pointer: "/file_name" }, rule: "required", message: "file_name is required." });
  else if (
    fileName.length > NAME_MAX_LENGTH ||
    /[/\\]/.test(fileName) ||
    [...fileName].some((c) => c.charCodeAt(0) < 32)
  )
    issues.push({
      source: { pointer: "/file_name" },
      rule: "format",
      message: `file_name is a plain file name of at most ${NAME_MAX_LENGTH} characters, without / or \\.`,
    });
  if (u.fileSize < 0 || u.fileSize > MAX_BYTES)
    issues.push({
      source: { pointer: "/file_size" },
      rule: "maximum",
      message: `file_size is between 1 and ${MAX_BYTES} bytes.`,
    });
  const displayName = u.displayName.trim() || fileName;
  if (displayName.length > NAME_MAX_LENGTH)
    issues.push({
      source: { pointer: "/display_name" },
      rule: "maxLength",
      message: `display_name is at most ${NAME_MAX_LENGTH} characters.`,
    });
  if (issues.length) throw new ApiError("validation_failed", "The upload cannot be created.", { issues });
  return { ...u, fileName, displayName };
}

/** The type the bytes are, by their magic number; undefined when none of the accepted types. */
export function sniffMimeType(head: Buffer): string | undefined {
  const starts = (bytes: number[], at = 0) => bytes.every((b, i) => head[at + i] === b);
  if (starts([0x25, 0x50, 0x44, 0x46, 0x2d])) return "application/pdf"; // %PDF-
  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png";
  if (starts([0xff, 0xd8, 0xff])) return "image/jpeg";
  if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return "image/webp"; // RIFF....WEBP
  return undefined;
}

export interface ContentProblem {
  code: "content_mismatch" | "file_too_large" | "empty_file";
  message: string;
}

/** Why stored bytes cannot make the document ready; undefined when they can. */
export function contentProblem(declared: string, size: number, head: Buffer): ContentProblem | undefined {
  if (size === 0) return { code: "empty_file", message: "The uploaded file is empty." };
  if (size > MAX_BYTES)
    return { code: "file_too_large", message: `The uploaded file is larger than ${MAX_BYTES} bytes.` };
  const actual = sniffMimeType(head);
  if (actual !== declared)
    return {
      code: "content_mismatch",
      message: actual
        ? `The uploaded bytes are ${actual}, not the declared ${declared}; upload the right file again.`
        : `The uploaded bytes are not ${declared} (their first bytes match none of ${MIME_TYPES.join(", ")}).`,
    };
  return undefined;
}
