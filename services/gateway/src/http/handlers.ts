/**
 * Thin handlers: read the request, call one gRPC method, map the answer.
 * Keyed by the route table's operationId.
 */
import { ApiError, invalidParameter, type ClientOf, type RequestContext } from "@dpp/kit";
import type { eventsV1, passportV1 } from "@dpp/proto";
import type { IdentityRepository, KeyRecord } from "../store/identity.repository";
import type { OrganizationAccess } from "../auth/authenticator";
import { categoryJson, categorySchemaJson, eventJson, list, passportJson } from "./mapping";

export interface HandlerInput {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  ctx: RequestContext;
  key?: KeyRecord;
  access?: OrganizationAccess;
}

export interface HandlerResult {
  status?: number;
  body: unknown;
  headers?: Record<string, string>;
}

export type Handler = (input: HandlerInput) => Promise<HandlerResult>;

export interface HandlerDeps {
  passport: ClientOf<typeof passportV1.PassportService>;
  events: ClientOf<typeof eventsV1.EventsService>;
  identity: IdentityRepository;
}

/** A single-valued query parameter ("" when absent); repeating it is refused. */
function single(query: Record<string, unknown>, name: string): string {
  const v = query[name];
  if (v === undefined) return "";
  if (typeof v !== "string") throw invalidParameter(name, "single_value", `${name} may be given once.`);
  return v;
}

function many(query: Record<string, unknown>, name: string): string[] {
  const v = query[name];
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).map(String);
}

/** The body must be a JSON object; anything else is a validation failure at the root. */
function bodyJson(body: unknown): string {
  if (body === undefined) return "{}";
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw new ApiError("validation_failed", "The request body must be a JSON object.", {
      issues: [{ source: { pointer: "" }, rule: "type", message: "expected an object" }],
    });
  return JSON.stringify(body);
}

export function createHandlers(deps: HandlerDeps): Record<string, Handler> {
  const { passport, events, identity } = deps;
  return {
    listCategories: async ({ ctx }) => {
      const res = await passport.listCategories({}, { context: ctx });
      return { body: list(res.categories.map(categoryJson), false, null) };
    },

    getCategorySchema: async ({ ctx, params }) => {
      const res = await passport.getCategorySchema({ category: params.category }, { context: ctx });
      return { body: categorySchemaJson(res.category!, res.schemaJson) };
    },

    whoami: async ({ key }) => {
      const k = key!;
      return {
        body: {
          object: "whoami",
          key_id: k.id,
          key_name: k.name,
          kind: k.kind,
          livemode: k.livemode,
          organization_id: k.organization_id,
          scopes: k.scopes,
          created_at: k.created_at.toISOString(),
          expires_at: k.expires_at?.toISOString() ?? null,
          rotation_overlap_ends_at: k.rotation_overlap_ends_at?.toISOString() ?? null,
        },
      };
    },

    listOrganizations: async ({ key }) => {
      const rows = await identity.connections(key!);
      return {
        body: list(
          rows.map((c) => ({
            object: "connection",
            organization_id: c.organization_id,
            name: `organizations/${c.organization_id}`,
            display_name: c.display_name,
            link_status: c.link_status,
            scopes: c.scopes,
            granted_at: c.granted_at.toISOString(),
          })),
          false,
          null,
        ),
      };
    },

    listPassports: async ({ ctx, query }) => {
      const res = await passport.listPassports(
        {
          limit: single(query, "limit"),
          cursor: single(query, "cursor"),
          status: single(query, "status"),
          category: single(query, "category"),
          updatedSince: single(query, "updated_since"),
        },
        { context: ctx },
      );
      return { body: list(res.passports.map(passportJson), res.hasMore, res.nextCursor || null) };
    },

    createPassport: async ({ ctx, body }) => {
      const res = await passport.createPassport({ bodyJson: bodyJson(body) }, { context: ctx });
      return { status: 201, body: passportJson(res.passport!) };
    },

    getPassport: async ({ ctx, params }) => {
      const res = await passport.getPassport({ id: params.id }, { context: ctx });
      return { body: passportJson(res.passport!) };
    },

    listEvents: async ({ ctx, query }) => {
      const res = await events.listEvents(
        { limit: single(query, "limit"), cursor: single(query, "cursor"), types: many(query, "type") },
        { context: ctx },
      );
      return { body: list(res.events.map(eventJson), res.hasMore, res.nextCursor) };
    },
  };
}
