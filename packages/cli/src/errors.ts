/**
 * Exit codes a script can branch on, and the one line printed for each failure. An API refusal keeps
 * its `code` and `Request-Id` in the message, so that a log line is enough to ask support.
 */
import { DppConnectionError, DppError, DppProtocolError } from "@dpp/client";

export const EXIT = {
  ok: 0,
  /** Anything not listed below (a 5xx, an answer that is not the API's). */
  failure: 1,
  /** Unknown command or option, a missing argument, unreadable JSON or file. */
  usage: 2,
  /** No API key or base URL: set DPP_API_KEY and DPP_BASE_URL, or run `dpp login`. */
  config: 3,
  /** 401 or 403: the key is invalid, expired, revoked, or lacks the scope. */
  auth: 4,
  /** 404: no such passport, or an organization the key is not granted. */
  notFound: 5,
  /** 409 or 412: a conflict, or the passport changed since the version you sent. */
  conflict: 6,
  /** 400 or 422: the request was refused as invalid. */
  invalid: 7,
  /** No answer from the API (connection refused, timeout). */
  connection: 8,
  /** The server does not offer this capability (imports, webhooks) yet. */
  notAvailable: 9,
  /** An import finished, and some of its rows failed. */
  rowsFailed: 10,
} as const;

/** A mistake in how the command was called. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** Settings that are missing or unreadable. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** The server answers 404 for a whole capability: it does not have it. */
export class NotAvailableError extends Error {
  override readonly name = "NotAvailableError";
  constructor(what: string) {
    super(`${what} is not available on this server.`);
  }
}

export function exitCodeOf(err: unknown): number {
  if (err instanceof UsageError) return EXIT.usage;
  if (err instanceof ConfigError) return EXIT.config;
  if (err instanceof NotAvailableError) return EXIT.notAvailable;
  if (err instanceof DppConnectionError) return EXIT.connection;
  if (err instanceof DppError) {
    if (err.status === 401 || err.status === 403) return EXIT.auth;
    if (err.status === 404) return EXIT.notFound;
    if (err.status === 409 || err.status === 412) return EXIT.conflict;
    if (err.status === 400 || err.status === 422) return EXIT.invalid;
  }
  return EXIT.failure;
}

export function messageOf(err: unknown): string {
  if (err instanceof DppError) {
    const lines = [`${err.code} (${err.status}): ${err.message}`];
    const issues = (err.details as { issues?: { pointer?: string; rule?: string; message?: string }[] })
      .issues;
    for (const issue of issues ?? [])
      lines.push(`  ${issue.pointer ?? ""} ${issue.rule ?? ""} ${issue.message ?? ""}`.trimEnd());
    if (err.requestId) lines.push(`request id: ${err.requestId}`);
    return lines.join("\n");
  }
  if (err instanceof DppConnectionError) return `No answer from the API: ${err.message}`;
  if (err instanceof DppProtocolError) return `Unexpected answer (${err.status}): ${err.message}`;
  if (err instanceof Error) return err.message;
  return String(err);
}
