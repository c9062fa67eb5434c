/**
 * The gateway's routes of the webhooks service (this file runs in the gateway: it is listed by
 * services/gateway/src/modules/index.generated.ts). Each handler reads the request, calls one method and maps
 * the answer to the public JSON of openapi.yaml.
 */
import { ApiError, type Issue } from "@dpp/contract";
import { parseLimit, type ClientOf } from "@dpp/kit";
import type { webhooksV1 } from "@dpp/proto";
import {
  bodyObject,
  KiB,
  list,
  noBody,
  rfc3339,
  rfc3339OrNull,
  single,
  unknownMembers,
  type GatewayModule,
  type ModuleFactory,
} from "@dpp/gateway/modules";

export type WebhooksClient = ClientOf<typeof webhooksV1.WebhooksService>;

const endpointName = (organizationId: string, id: string) => `organizations/${organizationId}/webhooks/${id}`;

export const endpointJson = (x: webhooksV1.Endpoint) => ({
  object: "webhook_endpoint" as const,
  id: x.id,
  name: endpointName(x.organizationId, x.id),
  organization_id: x.organizationId,
  livemode: x.livemode,
  url: x.url,
  description: x.description,
  types: x.types,
  enabled: x.enabled,
  disabled_reason: x.disabledReason || null,
  previous_secret_expires_at: rfc3339OrNull(x.previousSecretExpiresAt),
  created_at: rfc3339(x.createdAt),
  updated_at: rfc3339(x.updatedAt),
});

export const attemptJson = (a: webhooksV1.Attempt) => ({
  object: "webhook_attempt" as const,
  id: a.id,
  name: `${endpointName(a.organizationId, a.endpointId)}/attempts/${a.id}`,
  endpoint_id: a.endpointId,
  livemode: a.livemode,
  webhook_id: a.webhookId,
  event_id: a.eventId,
  event_type: a.eventType,
  next_cursor: a.nextCursor || null,
  kind: a.kind,
  status: a.status,
  response_status: a.responseStatus || null,
  error: a.error || null,
  latency_ms: a.latencyMs,
  attempted_at: rfc3339(a.attemptedAt),
  next_retry_at: rfc3339OrNull(a.nextRetryAt),
});

const withSecret = (r: { endpoint?: webhooksV1.Endpoint; secret: string }) => ({
  ...endpointJson(r.endpoint!),
  secret: r.secret,
});

/** The members of a create or update body, checked for their JSON types (their rules are the service's). */
function endpointFields(b: Record<string, unknown>, issues: Issue[], update: boolean) {
  const type = (pointer: string, message: string) =>
    issues.push({ source: { pointer }, rule: "type", message });
  if (!update && b.url === undefined)
    issues.push({ source: { pointer: "/url" }, rule: "required", message: "url is required." });
  if (b.url !== undefined && typeof b.url !== "string") type("/url", "url must be a string.");
  if (b.description !== undefined && typeof b.description !== "string")
    type("/description", "description must be a string.");
  if (b.types !== undefined && (!Array.isArray(b.types) || b.types.some((t) => typeof t !== "string")))
    type("/types", "types must be an array of strings.");
  if (update && b.enabled !== undefined && typeof b.enabled !== "boolean")
    type("/enabled", "enabled must be a boolean.");
  return {
    url: b.url as string | undefined,
    description: b.description as string | undefined,
    types: b.types as string[] | undefined,
    enabled: b.enabled as boolean | undefined,
  };
}

export function webhooksModule(deps: { client: WebhooksClient }): GatewayModule {
  const { client } = deps;
  const base = "/organizations/{organization}/webhooks";
  return {
    name: "webhooks",
    routes: [
      {
        operationId: "listWebhookEndpoints",
        method: "GET",
        path: base,
        auth: "organization",
        scope: "webhooks:read",
        idempotent: false,
        successStatus: 200,
        query: { limit: "single", cursor: "single" },
        handler: async ({ ctx, query }) => {
          const res = await client.listEndpoints(
            { limit: parseLimit(single(query, "limit")), cursor: single(query, "cursor") },
            { context: ctx },
          );
          return { body: list(res.endpoints.map(endpointJson), res.hasMore, res.nextCursor || null) };
        },
      },
      {
        operationId: "createWebhookEndpoint",
        method: "POST",
        path: base,
        auth: "organization",
        scope: "webhooks:write",
        idempotent: true,
        bodyLimitBytes: 8 * KiB,
        successStatus: 201,
        handler: async ({ ctx, body }) => {
          const b = bodyObject(body);
          const issues = unknownMembers(b, ["url", "description", "types"]);
          const f = endpointFields(b, issues, false);
          if (issues.length)
            throw new ApiError("validation_failed", "The webhook endpoint cannot be created.", { issues });
          const res = await client.createEndpoint(
            { url: f.url ?? "", description: f.description ?? "", types: f.types ?? [] },
            { context: ctx },
          );
          return { body: withSecret(res) };
        },
      },
      {
        operationId: "getWebhookEndpoint",
        method: "GET",
        path: `${base}/{id}`,
        auth: "organization",
        scope: "webhooks:read",
        idempotent: false,
        successStatus: 200,
        handler: async ({ ctx, params }) => {
          const res = await client.getEndpoint({ id: params.id! }, { context: ctx });
          return { body: endpointJson(res.endpoint!) };
        },
      },
      {
        operationId: "updateWebhookEndpoint",
        method: "PATCH",
        path: `${base}/{id}`,
        auth: "organization",
        scope: "webhooks:write",
        idempotent: true,
        bodyLimitBytes: 8 * KiB,
        successStatus: 200,
        handler: async ({ ctx, params, body }) => {
          const b = bodyObject(body);
          const issues = unknownMembers(b, ["url", "description", "types", "enabled"]);
          const f = endpointFields(b, issues, true);
          if (issues.length)
            throw new ApiError("validation_failed", "The webhook endpoint cannot be changed.", { issues });
          const res = await client.updateEndpoint(
            {
              id: params.id!,
              url: f.url,
              description: f.description,
              types: f.types ?? [],
              setTypes: f.types !== undefined,
              enabled: f.enabled,
            },
            { context: ctx },
          );
          return { body: endpointJson(res.endpoint!) };
        },
      },
      {
        operationId: "deleteWebhookEndpoint",
        method: "DELETE",
        path: `${base}/{id}`,
        auth: "organization",
        scope: "webhooks:write",
        idempotent: true,
        successStatus: 200,
        handler: async ({ ctx, params }) => {
          const res = await client.deleteEndpoint({ id: params.id! }, { context: ctx });
          const e = res.endpoint!;
          return {
            body: {
              object: "webhook_endpoint",
              id: e.id,
              name: endpointName(e.organizationId, e.id),
              deleted: true,
            },
          };
        },
      },
      {
        operationId: "rotateWebhookSecret",
        method: "POST",
        path: `${base}/{id}/rotate-secret`,
        auth: "organization",
        scope: "webhooks:write",
        idempotent: true,
        bodyLimitBytes: 1 * KiB,
        successStatus: 200,
        handler: async ({ ctx, params, body }) => {
          const b = bodyObject(body);
          const issues = unknownMembers(b, ["overlap_seconds"]);
          const overlap = b.overlap_seconds ?? 86_400;
          if (typeof overlap !== "number" || !Number.isInteger(overlap))
            issues.push({
              source: { pointer: "/overlap_seconds" },
              rule: "type",
              message: "overlap_seconds must be an integer.",
            });
          if (issues.length)
            throw new ApiError("validation_failed", "The secret cannot be rotated.", { issues });
          const res = await client.rotateSecret(
            // Out of int32's range: refused by the service's range rule all the same.
            { id: params.id!, overlapSeconds: Math.max(-1, Math.min(overlap as number, 2 ** 31 - 1)) },
            { context: ctx },
          );
          return { body: withSecret(res) };
        },
      },
      {
        operationId: "sendWebhookTestEvent",
        method: "POST",
        path: `${base}/{id}/test`,
        auth: "organization",
        scope: "webhooks:write",
        idempotent: false,
        bodyLimitBytes: 1 * KiB,
        successStatus: 200,
        handler: async ({ ctx, params, body }) => {
          noBody(body);
          const res = await client.sendTestEvent({ id: params.id! }, { context: ctx });
          return { body: attemptJson(res.attempt!) };
        },
      },
      {
        operationId: "listWebhookAttempts",
        method: "GET",
        path: `${base}/{id}/attempts`,
        auth: "organization",
        scope: "webhooks:read",
        idempotent: false,
        successStatus: 200,
        query: { limit: "single", cursor: "single" },
        handler: async ({ ctx, params, query }) => {
          const res = await client.listAttempts(
            {
              endpointId: params.id!,
              limit: parseLimit(single(query, "limit")),
              cursor: single(query, "cursor"),
            },
            { context: ctx },
          );
          return { body: list(res.attempts.map(attemptJson), res.hasMore, res.nextCursor || null) };
        },
      },
      {
        operationId: "redeliverWebhookAttempt",
        method: "POST",
        path: `${base}/{id}/attempts/{attemptId}/redeliver`,
        auth: "organization",
        scope: "webhooks:write",
        idempotent: false,
        bodyLimitBytes: 1 * KiB,
        successStatus: 200,
        handler: async ({ ctx, params, body }) => {
          noBody(body);
          const res = await client.redeliver(
            { endpointId: params.id!, attemptId: params.attemptId! },
            { context: ctx },
          );
          return { body: attemptJson(res.attempt!) };
        },
      },
    ],
  };
}

/** The module in the gateway's module list. */
export const fromDeps: ModuleFactory = (deps) => webhooksModule({ client: deps.webhooks });
