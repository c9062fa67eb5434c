/**
 * Thin handlers: read the request, call one gRPC method, map the answer.
 * Keyed by the route table's operationId.
 */
import { ApiError, invalidParameter, type ClientOf, type RequestContext } from "@dpp/kit";
import type { eventsV1, passportV1 } from "@dpp/proto";
import type { IdentityRepository, KeyRecord } from "../modules/identity/identity.repository";
import type { GrantTargetAccess, OrganizationAccess } from "../modules/identity/authenticator";
import { Grants } from "../modules/identity/grants";
import { computeCapabilities } from "../modules/identity/capabilities";
import {
  categoryJson,
  categorySchemaJson,
  eventJson,
  list,
  passportJson,
  passportLinksJson,
  publishedPassportJson,
  validationJson,
} from "./mapping";
import { OPENAPI_DOCUMENT } from "../openapi.generated";

export interface HandlerInput {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  ctx: RequestContext;
  key?: KeyRecord;
  access?: OrganizationAccess;
  /** Expected-Version / If-Match of a `conditional` route, syntax already checked. */
  conditional?: Conditional;
}

export interface Conditional {
  expectedVersion?: number;
  ifMatchAny: boolean;
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

/** Lifecycle calls take no body; an empty object is accepted, any member is refused. */
function noBody(body: unknown): void {
  if (body === undefined) return;
  bodyJson(body);
  const keys = Object.keys(body as object);
  if (keys.length)
    throw new ApiError("validation_failed", "This operation takes no body.", {
      issues: keys.map((k) => ({
        source: { pointer: `/${k.replace(/~/g, "~0").replace(/\//g, "~1")}` },
        rule: "unknown_field",
        message: `${k} is not a field of this body.`,
      })),
    });
}

/** The conditional headers as request fields. */
function conditionalFields(c: Conditional | undefined) {
  return { expectedVersion: c?.expectedVersion, ifMatchAny: c?.ifMatchAny ?? false };
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
  const grants = new Grants(identity);
  const grantor = (key: KeyRecord | undefined, access: OrganizationAccess | undefined) => {
    const a = access as GrantTargetAccess;
    return { organizationId: key!.organization_id, livemode: key!.livemode, role: a.role, link: a.link };
  };
  return {
    createGrant: async ({ key, access, params, body }) => {
      const out = await grants.create(grantor(key, access), params.organization!, body);
      return { status: 201, body: out.grant };
    },

    revokeGrant: async ({ key, access, params }) => {
      return { body: await grants.revoke(grantor(key, access), params.organization!, params.keyId!) };
    },

    listCapabilities: async ({ ctx, key, access }) => {
      const organization = access!.organization;
      const [usage, hasLiveKey] = await Promise.all([
        passport.getUsage({}, { context: ctx }),
        identity.hasUsableKey(organization.id, true),
      ]);
      const data = computeCapabilities({
        organization,
        livemode: key!.livemode,
        publishedCount: usage.publishedCount,
        documentsUsed: 0,
        hasLiveKey,
      });
      return { body: list(data, false, null) };
    },

    getOpenApiDocument: async () => ({ body: OPENAPI_DOCUMENT }),

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

    updatePassport: async ({ ctx, params, body, conditional }) => {
      const res = await passport.updatePassport(
        { id: params.id, patchJson: bodyJson(body), ...conditionalFields(conditional) },
        { context: ctx },
      );
      return { body: passportJson(res.passport!) };
    },

    publishPassport: async ({ ctx, params, body, conditional }) => {
      const res = await passport.publishPassport(
        {
          id: params.id,
          bodyJson: body === undefined ? "" : bodyJson(body),
          ...conditionalFields(conditional),
        },
        { context: ctx },
      );
      return { body: publishedPassportJson(res.passport!, res.warnings) };
    },

    unpublishPassport: async ({ ctx, params, body, conditional }) => {
      noBody(body);
      const res = await passport.unpublishPassport(
        { id: params.id, ...conditionalFields(conditional) },
        { context: ctx },
      );
      return { body: passportJson(res.passport!) };
    },

    trashPassport: async ({ ctx, params, body, conditional }) => {
      noBody(body);
      const res = await passport.trashPassport(
        { id: params.id, ...conditionalFields(conditional) },
        { context: ctx },
      );
      return { body: passportJson(res.passport!) };
    },

    restorePassport: async ({ ctx, params, body, conditional }) => {
      noBody(body);
      const res = await passport.restorePassport(
        { id: params.id, ...conditionalFields(conditional) },
        { context: ctx },
      );
      return { body: passportJson(res.passport!) };
    },

    validatePassport: async ({ ctx, params, body }) => {
      const res = await passport.validatePassport(
        { id: params.id, bodyJson: body === undefined ? "" : bodyJson(body) },
        { context: ctx },
      );
      return { body: validationJson(res.validation!) };
    },

    getPassportLinks: async ({ ctx, params }) => {
      const res = await passport.getPassportLinks({ id: params.id }, { context: ctx });
      return { body: passportLinksJson(res.links!) };
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
