/**
 * The passport service's routes: categories and passports. Each handler reads the request, calls one
 * PassportService method and maps the answer (mapping.ts).
 */
import type { CallOptions, ClientOf } from "@dpp/kit";
import type { passportV1 } from "@dpp/proto";
import { list, rawList } from "../../http/json";
import { bodyRefusal, conditionalFields, noBody } from "../../http/request";
import { KiB, MiB, type GatewayModule, type Route } from "../../http/route";
import type { ModuleFactory } from "../deps";
import {
  approvalRequired,
  categoryJson,
  categorySchemaJson,
  passportLinksJson,
  passportText,
  proposalJson,
  publishedPassportJson,
  validationJson,
} from "./mapping";
import {
  CREATE_MEMBERS,
  createPassportRequest,
  createProposalFields,
  listPassportsRequest,
  publishPassportRequest,
  updatePassportPatch,
  validatePassportRequest,
} from "./requests";

export type PassportClient = ClientOf<typeof passportV1.PassportService>;

type TransitionCall = (
  req: { id: string; expectedVersion?: number },
  opts: CallOptions,
) => Promise<{ passport?: passportV1.Passport }>;

/** A lifecycle transition without a body: POST .../passports/{id}/<verb>, conditional and idempotent. */
function transition(operationId: string, verb: string, call: TransitionCall): Route {
  return {
    operationId,
    method: "POST",
    path: `/organizations/{organization}/passports/{id}/${verb}`,
    auth: "organization",
    scope: "passports:write",
    idempotent: true,
    bodyLimitBytes: 1 * KiB,
    successStatus: 200,
    conditional: true,
    handler: async ({ ctx, params, body, conditional }) => {
      noBody(body);
      const res = await call({ id: params.id!, ...conditionalFields(conditional) }, { context: ctx });
      return { body: passportText(res.passport!) };
    },
  };
}

export function passportModule(deps: { client: PassportClient }): GatewayModule {
  const { client } = deps;
  return {
    name: "passport",
    routes: [
      {
        operationId: "listCategories",
        method: "GET",
        path: "/categories",
        auth: "optional",
        idempotent: false,
        successStatus: 200,
        handler: async ({ ctx }) => {
          const res = await client.listCategories({}, { context: ctx });
          return { body: list(res.categories.map(categoryJson), false, null) };
        },
      },
      {
        operationId: "getCategorySchema",
        method: "GET",
        path: "/categories/{category}/schema",
        auth: "optional",
        idempotent: false,
        successStatus: 200,
        handler: async ({ ctx, params }) => {
          const res = await client.getCategorySchema({ category: params.category }, { context: ctx });
          return { body: categorySchemaJson(res.category!, res.schemaJson) };
        },
      },
      {
        operationId: "listPassports",
        method: "GET",
        path: "/organizations/{organization}/passports",
        auth: "organization",
        scope: "passports:read",
        idempotent: false,
        successStatus: 200,
        query: {
          limit: "single",
          cursor: "single",
          status: "single",
          category: "single",
          updated_since: "single",
        },
        handler: async ({ ctx, query }) => {
          const { request, deferred } = listPassportsRequest(query);
          if (deferred) {
            // The category is checked before updated_since: its refusal, if any, is the answer.
            if (request.category)
              await client.listPassports(
                {
                  limit: request.limit,
                  status: request.status,
                  category: request.category,
                  validateOnly: true,
                },
                { context: ctx },
              );
            throw deferred;
          }
          const res = await client.listPassports(request, { context: ctx });
          return { body: rawList(res.passports.map(passportText), res.hasMore, res.nextCursor || null) };
        },
      },
      {
        operationId: "createPassport",
        method: "POST",
        path: "/organizations/{organization}/passports",
        auth: "organization",
        scope: "passports:write",
        idempotent: true,
        bodyLimitBytes: 1 * MiB,
        successStatus: 201,
        handler: async ({ ctx, body }) => {
          const { request, issues } = createPassportRequest(body);
          if (issues.length)
            throw await bodyRefusal(issues, CREATE_MEMBERS, () =>
              client.createPassport({ ...request, validateOnly: true }, { context: ctx }),
            );
          const res = await client.createPassport(request, { context: ctx });
          return { body: passportText(res.passport!) };
        },
      },
      {
        operationId: "getPassport",
        method: "GET",
        path: "/organizations/{organization}/passports/{id}",
        auth: "organization",
        scope: "passports:read",
        idempotent: false,
        successStatus: 200,
        handler: async ({ ctx, params }) => {
          const res = await client.getPassport({ id: params.id }, { context: ctx });
          return { body: passportText(res.passport!) };
        },
      },
      {
        operationId: "updatePassport",
        method: "PATCH",
        path: "/organizations/{organization}/passports/{id}",
        auth: "organization",
        scope: "passports:write",
        idempotent: true,
        bodyLimitBytes: 1 * MiB,
        successStatus: 200,
        conditional: true,
        handler: async ({ ctx, params, body, conditional }) => {
          const res = await client.updatePassport(
            { id: params.id, patchJson: updatePassportPatch(body), ...conditionalFields(conditional) },
            { context: ctx },
          );
          return { body: passportText(res.passport!) };
        },
      },
      {
        operationId: "publishPassport",
        method: "POST",
        path: "/organizations/{organization}/passports/{id}/publish",
        auth: "organization",
        scope: "passports:write",
        idempotent: true,
        bodyLimitBytes: 4 * KiB,
        successStatus: 200,
        conditional: true,
        handler: async ({ ctx, params, body, conditional }) => {
          const { outcome } = await client.publishPassport(
            { id: params.id, ...publishPassportRequest(body), ...conditionalFields(conditional) },
            { context: ctx },
          );
          if (outcome.case === "approvalRequired") throw approvalRequired(outcome.value);
          if (outcome.case !== "published") throw new Error("the publish answered no outcome");
          return { body: publishedPassportJson(outcome.value) };
        },
      },
      transition("unpublishPassport", "unpublish", (req, o) => client.unpublishPassport(req, o)),
      // Not shaped by the spec: writes like unpublish, so they take an Idempotency-Key and Expected-Version.
      transition("trashPassport", "trash", (req, o) => client.trashPassport(req, o)),
      transition("restorePassport", "restore", (req, o) => client.restorePassport(req, o)),
      {
        // Changes no passport (it may keep a validation record): safe to repeat, so no Idempotency-Key.
        operationId: "validatePassport",
        method: "POST",
        path: "/organizations/{organization}/passports/{id}/validate",
        auth: "organization",
        scope: "passports:write",
        idempotent: false,
        bodyLimitBytes: 1 * KiB,
        successStatus: 200,
        handler: async ({ ctx, params, body }) => {
          const res = await client.validatePassport(
            { id: params.id, ...validatePassportRequest(body) },
            { context: ctx },
          );
          return { body: validationJson(res.validation!) };
        },
      },
      {
        operationId: "getPassportLinks",
        method: "GET",
        path: "/organizations/{organization}/passports/{id}/links",
        auth: "organization",
        scope: "passports:read",
        idempotent: false,
        successStatus: 200,
        handler: async ({ ctx, params }) => {
          const res = await client.getPassportLinks({ id: params.id }, { context: ctx });
          return { body: passportLinksJson(res.links!) };
        },
      },
      {
        operationId: "createProposal",
        method: "POST",
        path: "/organizations/{organization}/passports/{id}/proposals",
        auth: "organization",
        scope: "passports:write",
        idempotent: true,
        bodyLimitBytes: 1 * MiB,
        successStatus: 201,
        handler: async ({ ctx, params, body }) => {
          const res = await client.createProposal(
            { passportId: params.id, fieldsJson: createProposalFields(body) },
            { context: ctx },
          );
          return { body: proposalJson(res.proposal!) };
        },
      },
      {
        operationId: "getProposal",
        method: "GET",
        path: "/organizations/{organization}/proposals/{id}",
        auth: "organization",
        scope: "passports:read",
        idempotent: false,
        successStatus: 200,
        handler: async ({ ctx, params }) => {
          const res = await client.getProposal({ id: params.id }, { context: ctx });
          return { body: proposalJson(res.proposal!) };
        },
      },
      {
        operationId: "withdrawProposal",
        method: "POST",
        path: "/organizations/{organization}/proposals/{id}/withdraw",
        auth: "organization",
        scope: "passports:write",
        idempotent: true,
        bodyLimitBytes: 1 * KiB,
        successStatus: 200,
        handler: async ({ ctx, params, body }) => {
          noBody(body);
          const res = await client.withdrawProposal({ id: params.id }, { context: ctx });
          return { body: proposalJson(res.proposal!) };
        },
      },
    ],
  };
}

/** The module in the gateway's module list (index.generated.ts). */
export const fromDeps: ModuleFactory = (deps) => passportModule({ client: deps.passport });
