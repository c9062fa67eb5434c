/** WebhooksService: thin handlers; the rules live in ../domain, the queries in ../store. */
import { ApiError, newId, validationFailed, type Issue } from "@dpp/contract";
import { decodeCursor, page, pageLimit, requireTenant, type ImplOf, type TenantContext } from "@dpp/kit";
import { timestampFromDate, type webhooksV1 } from "@dpp/proto";
import { checkDescription, checkOverlap, checkTypes, checkUrl } from "../domain/endpoint";
import { newSecret, deliveryBody } from "../domain/signature";
import { allowedAddress, type HttpOptions } from "../delivery/http";
import { deliver, tenantContext, type EventsClient } from "../delivery/worker";
import type { AttemptRow, EndpointRow, WebhooksStore } from "../store/store";

const ts = (d: Date | null) => (d ? timestampFromDate(d) : undefined);

export const endpointMessage = (r: EndpointRow) => ({
  id: r.id,
  organizationId: r.organization_id,
  livemode: r.livemode,
  url: r.url,
  description: r.description,
  types: r.types,
  enabled: r.enabled,
  disabledReason: r.disabled_reason ?? "",
  previousSecretExpiresAt:
    r.previous_secret && r.previous_secret_expires_at && r.previous_secret_expires_at > new Date()
      ? timestampFromDate(r.previous_secret_expires_at)
      : undefined,
  createdAt: timestampFromDate(r.created_at),
  updatedAt: timestampFromDate(r.updated_at),
});

export const attemptMessage = (a: AttemptRow) => ({
  id: a.id,
  endpointId: a.endpoint_id,
  organizationId: a.organization_id,
  livemode: a.livemode,
  webhookId: a.webhook_id,
  eventId: a.event_id,
  eventType: a.event_type,
  nextCursor: a.next_cursor ?? "",
  kind: a.kind,
  status: a.status,
  responseStatus: a.response_status ?? 0,
  error: a.error ?? "",
  latencyMs: a.latency_ms,
  attemptedAt: timestampFromDate(a.attempted_at),
  nextRetryAt: ts(a.next_retry_at),
});

const notFound = (what = "webhook endpoint") =>
  new ApiError("resource_not_found", `No such ${what} in this organization and mode.`);

function cursorPosition(list: string, cursor: string): string | undefined {
  const after = decodeCursor<unknown>(list, {}, cursor);
  if (after !== undefined && typeof after !== "string")
    throw new ApiError("cursor_invalid", "The cursor is malformed; pass next_cursor exactly as received.");
  return after;
}

export interface WebhooksApp {
  store: WebhooksStore;
  events: EventsClient;
  http: HttpOptions;
  onCommitted: () => void;
}

/** Checks the URL's form and, now, the addresses its host resolves to (checked again at every delivery). */
async function checkedUrl(app: WebhooksApp, raw: string, t: TenantContext, issues: Issue[]): Promise<string> {
  const u = checkUrl(raw, t.livemode, issues);
  if (!u) return raw;
  const target = await allowedAddress(u, t.livemode, app.http.resolve);
  if ("error" in target && target.error === "address_not_allowed")
    issues.push({
      source: { pointer: "/url" },
      rule: "address_not_allowed",
      message: t.livemode
        ? "url's host resolves to a loopback, private, link-local or metadata address, which live mode never reaches."
        : "url's host resolves to a private, link-local or metadata address (test mode reaches loopback only).",
    });
  // A host that does not resolve now is accepted: it is resolved, and checked, at every delivery.
  return u.toString();
}

export function webhooksRpc(app: WebhooksApp): ImplOf<typeof webhooksV1.WebhooksService> {
  const { store } = app;
  const committed = <T>(v: T) => {
    app.onCommitted();
    return v;
  };
  return {
    createEndpoint: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      const issues: Issue[] = [];
      const url = await checkedUrl(app, req.url, t, issues);
      const description = checkDescription(req.description, issues);
      const types = checkTypes(req.types, issues);
      if (issues.length) throw validationFailed(issues, "The webhook endpoint cannot be created.");
      // Deliveries start with the events that enter the feed after this point.
      const head = await app.events.readFeed(
        { afterSequence: BigInt(Number.MAX_SAFE_INTEGER), limit: 1 },
        { context: tenantContext({ organization_id: t.organizationId, livemode: t.livemode }) },
      );
      const secret = newSecret();
      const row = await store.create(ctx, t, {
        url,
        description,
        types,
        secret,
        deliveredSequence: Number(head.headSequence),
      });
      return committed({ endpoint: endpointMessage(row), secret: row.secret });
    },

    listEndpoints: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      const limit = pageLimit(req.limit);
      const after = cursorPosition("webhook_endpoints", req.cursor);
      const p = page(await store.list(t, limit + 1, after), limit, {
        list: "webhook_endpoints",
        filters: {},
        position: (r) => r.id,
      });
      return { endpoints: p.rows.map(endpointMessage), hasMore: p.hasMore, nextCursor: p.nextCursor };
    },

    getEndpoint: async (req, { ctx }) => {
      const row = await store.get(requireTenant(ctx), req.id);
      if (!row) throw notFound();
      return { endpoint: endpointMessage(row) };
    },

    updateEndpoint: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      const issues: Issue[] = [];
      const url = req.url !== undefined ? await checkedUrl(app, req.url, t, issues) : undefined;
      const description =
        req.description !== undefined ? checkDescription(req.description, issues) : undefined;
      const types = req.setTypes ? checkTypes(req.types, issues) : undefined;
      if (issues.length) throw validationFailed(issues, "The webhook endpoint cannot be changed.");
      const row = await store.update(ctx, t, req.id, { url, description, types, enabled: req.enabled });
      if (!row) throw notFound();
      return committed({ endpoint: endpointMessage(row) });
    },

    deleteEndpoint: async (req, { ctx }) => {
      const row = await store.remove(ctx, requireTenant(ctx), req.id);
      if (!row) throw notFound();
      return committed({ endpoint: endpointMessage(row) });
    },

    rotateSecret: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      const overlap = checkOverlap(req.overlapSeconds < 0 ? -1 : req.overlapSeconds);
      const row = await store.rotate(ctx, t, req.id, newSecret(), overlap);
      if (!row) throw notFound();
      return committed({ endpoint: endpointMessage(row), secret: row.secret });
    },

    sendTestEvent: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      const e = await store.get(t, req.id);
      if (!e) throw notFound();
      const id = newId("evt");
      const event = {
        object: "event",
        id,
        name: `organizations/${e.organization_id}/events/${id}`,
        organization_id: e.organization_id,
        type: "webhook_endpoint.test",
        livemode: e.livemode,
        created_at: new Date().toISOString(),
        related: {
          object: "webhook_endpoint",
          id: e.id,
          name: `organizations/${e.organization_id}/webhooks/${e.id}`,
        },
      };
      const res = await deliver(e, id, deliveryBody(JSON.stringify(event), null), app.http);
      const attempt = await store.recordAttempt({
        endpoint_id: e.id,
        organization_id: e.organization_id,
        livemode: e.livemode,
        webhook_id: id,
        event_id: id,
        event_type: event.type,
        sequence: null,
        next_cursor: null,
        kind: "test",
        status: res.ok ? "succeeded" : "failed",
        response_status: res.status ?? null,
        error: res.error ?? null,
        latency_ms: res.latencyMs,
        next_retry_at: null,
      });
      return { attempt: attemptMessage(attempt) };
    },

    listAttempts: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      if (!(await store.get(t, req.endpointId))) throw notFound();
      const limit = pageLimit(req.limit);
      const after = cursorPosition("webhook_attempts", req.cursor);
      const p = page(await store.listAttempts(t, req.endpointId, limit + 1, after), limit, {
        list: "webhook_attempts",
        filters: {},
        position: (r) => r.id,
      });
      return { attempts: p.rows.map(attemptMessage), hasMore: p.hasMore, nextCursor: p.nextCursor };
    },

    redeliver: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      const e = await store.get(t, req.endpointId);
      if (!e) throw notFound();
      const prior = await store.getAttempt(t, req.endpointId, req.attemptId);
      if (!prior) throw notFound("delivery attempt");
      if (prior.sequence === null)
        throw new ApiError(
          "invalid_request",
          "A test event's attempt cannot be delivered again; send another test.",
          {
            issues: [{ source: { parameter: "attemptId" }, rule: "not_redeliverable" }],
          },
        );
      const sequence = Number(prior.sequence);
      const feed = await app.events.readFeed(
        { afterSequence: BigInt(sequence - 1), limit: 1 },
        { context: tenantContext(e) },
      );
      const entry = feed.entries[0];
      if (!entry || Number(entry.sequence) !== sequence)
        throw new ApiError("resource_not_found", "The attempt's event is no longer in the feed (retention).");
      const res = await deliver(e, prior.webhook_id, deliveryBody(entry.eventJson, entry.cursor), app.http);
      const attempt = await store.recordAttempt({
        endpoint_id: e.id,
        organization_id: e.organization_id,
        livemode: e.livemode,
        webhook_id: prior.webhook_id,
        event_id: prior.event_id,
        event_type: prior.event_type,
        sequence,
        next_cursor: entry.cursor,
        kind: "redelivery",
        status: res.ok ? "succeeded" : "failed",
        response_status: res.status ?? null,
        error: res.error ?? null,
        latency_ms: res.latencyMs,
        next_retry_at: null,
      });
      return { attempt: attemptMessage(attempt) };
    },

    getBacklog: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      const e = await store.get(t, req.id);
      if (!e) throw notFound();
      const head = await app.events.readFeed(
        { afterSequence: BigInt(Number.MAX_SAFE_INTEGER), limit: 1 },
        { context: tenantContext(e) },
      );
      const delivered = Number(e.delivered_sequence);
      const headSequence = Number(head.headSequence);
      return {
        endpoint: endpointMessage(e),
        deliveredSequence: BigInt(delivered),
        headSequence: BigInt(headSequence),
        pendingEvents: BigInt(Math.max(0, headSequence - delivered)),
        failedAttempts: e.failed_attempts,
        nextAttemptAt: timestampFromDate(e.next_attempt_at),
        failingSince: ts(e.failing_since),
      };
    },
  };
}
