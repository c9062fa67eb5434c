/**
 * The gateway's routes of the filings service (this file runs in the gateway: it is listed by
 * services/gateway/src/modules/index.generated.ts). Each handler reads the request, calls one method and maps
 * the answer to the public JSON of openapi.yaml.
 */
import { ApiError } from "@dpp/contract";
import { parseLimit, type ClientOf } from "@dpp/kit";
import type { filingsV1 } from "@dpp/proto";
import {
  bodyObject,
  KiB,
  list,
  rfc3339,
  single,
  unknownMembers,
  type GatewayModule,
  type ModuleFactory,
} from "@dpp/gateway/modules";

export type FilingsClient = ClientOf<typeof filingsV1.FilingsService>;

export const filingsJson = (x: filingsV1.Filing) => ({
  object: "filing" as const,
  id: x.id,
  name: `organizations/${x.organizationId}/filings/${x.id}`,
  livemode: x.livemode,
  label: x.label,
  created_at: rfc3339(x.createdAt),
});

export function filingsModule(deps: { client: FilingsClient }): GatewayModule {
  const { client } = deps;
  return {
    name: "filings",
    routes: [
      {
        operationId: "listFilings",
        method: "GET",
        path: "/organizations/{organization}/filings",
        auth: "organization",
        scope: "filings:read",
        idempotent: false,
        successStatus: 200,
        query: { limit: "single", cursor: "single" },
        handler: async ({ ctx, query }) => {
          const res = await client.listFilings(
            { limit: parseLimit(single(query, "limit")), cursor: single(query, "cursor") },
            { context: ctx },
          );
          return { body: list(res.filings.map(filingsJson), res.hasMore, res.nextCursor || null) };
        },
      },
      {
        operationId: "createFiling",
        method: "POST",
        path: "/organizations/{organization}/filings",
        auth: "organization",
        scope: "filings:write",
        idempotent: true,
        bodyLimitBytes: 4 * KiB,
        successStatus: 201,
        handler: async ({ ctx, body }) => {
          const b = bodyObject(body);
          const issues = unknownMembers(b, ["label"]);
          if (b.label !== undefined && typeof b.label !== "string")
            issues.push({ source: { pointer: "/label" }, rule: "type", message: "label must be a string." });
          if (issues.length)
            throw new ApiError("validation_failed", "The filing cannot be created.", { issues });
          const res = await client.createFiling(
            { label: (b.label as string | undefined) ?? "" },
            { context: ctx },
          );
          return { body: filingsJson(res.filing!) };
        },
      },
    ],
  };
}

/** The module in the gateway's module list. */
export const fromDeps: ModuleFactory = (deps) => filingsModule({ client: deps.filings });
