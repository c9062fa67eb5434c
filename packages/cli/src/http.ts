/**
 * Calls the SDK does not wrap yet (imports, webhooks): one request with the key, answered as the SDK
 * answers (the body, or a DppError built from the error envelope; DppConnectionError when no answer).
 */
import { DppConnectionError, DppError, DppProtocolError, newIdempotencyKey } from "@dpp/client";
import type { Settings } from "./config";
import { NotAvailableError } from "./errors";

interface Envelope {
  error: {
    code: string;
    message: string;
    request_id: string;
    documentation_url: string;
    details?: Record<string, unknown>;
  };
}

const isEnvelope = (v: unknown): v is Envelope =>
  typeof v === "object" && v !== null && "error" in v && typeof (v as Envelope).error?.code === "string";

export async function call<T>(
  settings: Settings,
  method: "GET" | "POST",
  path: string,
  o: { body?: unknown; idempotent?: boolean; capability?: string } = {},
): Promise<T> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${settings.apiKey}`,
    accept: "application/json",
  };
  if (o.body !== undefined) headers["content-type"] = "application/json";
  const idempotencyKey = o.idempotent ? newIdempotencyKey() : undefined;
  if (idempotencyKey) headers["idempotency-key"] = idempotencyKey;
  let res: Response;
  try {
    res = await fetch(settings.baseUrl + path, {
      method,
      headers,
      body: o.body === undefined ? undefined : JSON.stringify(o.body),
    });
  } catch (err) {
    throw new DppConnectionError(`${method} ${path}: ${(err as Error).message}`, false, idempotencyKey, 1, {
      cause: err,
    });
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (isEnvelope(body)) {
    // An unknown route answers 404 resource_not_found: the server has no such capability.
    if (o.capability && res.status === 404 && body.error.code === "resource_not_found")
      throw new NotAvailableError(o.capability);
    throw new DppError(res.status, body.error as ConstructorParameters<typeof DppError>[1], {
      idempotencyKey,
      attempts: 1,
    });
  }
  if (!res.ok || typeof body !== "object" || body === null)
    throw new DppProtocolError(
      `Unexpected ${res.status} answer to ${method} ${path}: ${text.slice(0, 200)}`,
      res.status,
      res.headers.get("request-id") ?? undefined,
    );
  return body as T;
}
