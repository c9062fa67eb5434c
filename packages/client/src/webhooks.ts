/**
 * Webhook endpoints of one organization (`dpp.organization(id).webhooks`), and `verifyWebhook`, which checks a
 * delivery as the Standard Webhooks specification says (the same check as its `standardwebhooks` library, written
 * on WebCrypto so the SDK has no dependency) and answers the typed event and the feed cursor after it.
 */
import {
  Core,
  readSettings,
  writeSettings,
  type RequestOptions,
  type WithResponse,
  type WriteOptions,
} from "./core";
import type { components } from "./openapi.generated";
import type { ListIterator } from "./pagination";

export type WebhookEndpoint = components["schemas"]["WebhookEndpoint"];
export type WebhookEndpointWithSecret = components["schemas"]["WebhookEndpointWithSecret"];
export type DeletedWebhookEndpoint = components["schemas"]["DeletedWebhookEndpoint"];
export type WebhookAttempt = components["schemas"]["WebhookAttempt"];
export type CreateWebhookEndpoint = components["schemas"]["CreateWebhookEndpointRequest"];
export type UpdateWebhookEndpoint = components["schemas"]["UpdateWebhookEndpointRequest"];
/** The body of a delivery: the feed's event object, and the feed cursor just after it (null for a test event). */
export type WebhookDelivery = components["schemas"]["Event"] & { next_cursor: string | null };

export class WebhookEndpoints {
  constructor(
    private readonly core: Core,
    private readonly organization: string,
  ) {}

  private one(id: string) {
    return { path: { organization: this.organization, id } };
  }

  list(
    params: { limit?: number; cursor?: string } = {},
    options: RequestOptions = {},
  ): ListIterator<WebhookEndpoint> {
    const { cursor: start, ...filters } = params;
    return this.core.list(
      (cursor) =>
        this.core.send(readSettings(options), (fetch) =>
          this.core.api.GET("/organizations/{organization}/webhooks", {
            params: {
              path: { organization: this.organization },
              query: { ...filters, ...(cursor ? { cursor } : {}) },
            },
            fetch,
          }),
        ),
      start,
    );
  }

  /** Creates an endpoint; its `secret` is in this answer only. */
  create(
    body: CreateWebhookEndpoint,
    options: WriteOptions = {},
  ): Promise<WithResponse<WebhookEndpointWithSecret>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/webhooks", {
        params: { path: { organization: this.organization } },
        body,
        fetch,
      }),
    );
  }

  get(id: string, options: RequestOptions = {}): Promise<WithResponse<WebhookEndpoint>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.GET("/organizations/{organization}/webhooks/{id}", { params: this.one(id), fetch }),
    );
  }

  update(
    id: string,
    body: UpdateWebhookEndpoint,
    options: WriteOptions = {},
  ): Promise<WithResponse<WebhookEndpoint>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.PATCH("/organizations/{organization}/webhooks/{id}", {
        params: this.one(id),
        body,
        fetch,
      }),
    );
  }

  delete(id: string, options: WriteOptions = {}): Promise<WithResponse<DeletedWebhookEndpoint>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.DELETE("/organizations/{organization}/webhooks/{id}", { params: this.one(id), fetch }),
    );
  }

  /** A new secret; the previous one also signs for `overlap_seconds` (default one day). */
  rotateSecret(
    id: string,
    body: { overlap_seconds?: number } = {},
    options: WriteOptions = {},
  ): Promise<WithResponse<WebhookEndpointWithSecret>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/webhooks/{id}/rotate-secret", {
        params: this.one(id),
        body,
        fetch,
      }),
    );
  }

  /** Delivers a test event now and answers its attempt. */
  sendTest(id: string, options: RequestOptions = {}): Promise<WithResponse<WebhookAttempt>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/webhooks/{id}/test", { params: this.one(id), fetch }),
    );
  }

  attempts(
    id: string,
    params: { limit?: number; cursor?: string } = {},
    options: RequestOptions = {},
  ): ListIterator<WebhookAttempt> {
    const { cursor: start, ...filters } = params;
    return this.core.list(
      (cursor) =>
        this.core.send(readSettings(options), (fetch) =>
          this.core.api.GET("/organizations/{organization}/webhooks/{id}/attempts", {
            params: {
              path: { organization: this.organization, id },
              query: { ...filters, ...(cursor ? { cursor } : {}) },
            },
            fetch,
          }),
        ),
      start,
    );
  }

  /** Delivers an attempt's event again, with the same webhook-id, and answers the new attempt. */
  redeliver(
    id: string,
    attemptId: string,
    options: RequestOptions = {},
  ): Promise<WithResponse<WebhookAttempt>> {
    return this.core.send(readSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/webhooks/{id}/attempts/{attemptId}/redeliver", {
        params: { path: { organization: this.organization, id, attemptId } },
        fetch,
      }),
    );
  }
}

/** A delivery that does not verify: a missing header, a stale timestamp or no matching signature. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

const TOLERANCE_SECONDS = 5 * 60;

function header(headers: Headers | Record<string, string | string[] | undefined>, name: string): string {
  const v = headers instanceof Headers ? headers.get(name) : headers[name];
  const text = Array.isArray(v) ? v[0] : v;
  if (!text) throw new WebhookVerificationError(`missing ${name} header`);
  return text;
}

function base64ToBytes(b64: string): Uint8Array<ArrayBuffer> {
  const bin = atob(b64);
  const out = new Uint8Array(new ArrayBuffer(bin.length));
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function bytesToBase64(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

/**
 * Verifies a delivery (the raw body exactly as received, and its headers) with the endpoint's secret, as the
 * Standard Webhooks specification does: the timestamp within 5 minutes of now, and one of the `v1,` signatures
 * equal to the HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`. Answers the event, the feed cursor after
 * it (pass it as `cursor` to `events.list` to read what follows) and the webhook-id (the same on every attempt of
 * an event: drop repeats by it).
 */
export async function verifyWebhook(
  body: string,
  headers: Headers | Record<string, string | string[] | undefined>,
  secret: string,
  options: { now?: Date } = {},
): Promise<{ event: WebhookDelivery; cursor: string | null; webhookId: string }> {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  const seconds = Number(timestamp);
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  if (!/^\d+$/.test(timestamp) || Math.abs(now - seconds) > TOLERANCE_SECONDS)
    throw new WebhookVerificationError("webhook-timestamp is not within 5 minutes of now");
  const key = await globalThis.crypto.subtle.importKey(
    "raw",
    base64ToBytes(secret.startsWith("whsec_") ? secret.slice(6) : secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = await globalThis.crypto.subtle.sign(
    "HMAC",
    key,
    new TextEncoder().encode(`${id}.${timestamp}.${body}`),
  );
  const expected = bytesToBase64(new Uint8Array(mac));
  const match = signatures.split(" ").some((s) => {
    const [version, sig] = s.split(",", 2);
    if (version !== "v1" || sig === undefined || sig.length !== expected.length) return false;
    let diff = 0;
    for (let i = 0; i < sig.length; i++) diff |= sig.charCodeAt(i) ^ expected.charCodeAt(i);
    return diff === 0;
  });
  if (!match) throw new WebhookVerificationError("no matching signature");
  const event = JSON.parse(body) as WebhookDelivery;
  return { event, cursor: event.next_cursor, webhookId: id };
}
