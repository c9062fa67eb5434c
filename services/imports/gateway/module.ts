/**
 * The gateway's routes of the imports service (this file runs in the gateway: it is listed by
 * services/gateway/src/modules/index.generated.ts). Each handler reads the request, calls one method and maps
 * the answer to the public JSON of openapi.yaml.
 */
import { ApiError } from "@dpp/contract";
import { parseLimit, type ClientOf } from "@dpp/kit";
import type { importsV1 } from "@dpp/proto";
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

export type ImportsClient = ClientOf<typeof importsV1.ImportsService>;

export const importsJson = (x: importsV1.Import) => ({
  object: "import" as const,
  id: x.id,
  name: `organizations/${x.organizationId}/imports/${x.id}`,
  livemode: x.livemode,
  label: x.label,
  created_at: rfc3339(x.createdAt),
});

export function importsModule(deps: { client: ImportsClient }): GatewayModule {
  const { client } = deps;
  return {
    name: "imports",
    routes: [
      {
        operationId: "listImports",
        method: "GET",
        path: "/organizations/{organization}/imports",
        auth: "organization",
        scope: "imports:read",
        idempotent: false,
        successStatus: 200,
        query: { limit: "single", cursor: "single" },
        handler: async ({ ctx, query }) => {
          const res = await client.listImports(
            { limit: parseLimit(single(query, "limit")), cursor: single(query, "cursor") },
            { context: ctx },
          );
          return { body: list(res.imports.map(importsJson), res.hasMore, res.nextCursor || null) };
        },
      },
      {
        operationId: "createImport",
        method: "POST",
        path: "/organizations/{organization}/imports",
        auth: "organization",
        scope: "imports:write",
        idempotent: true,
        bodyLimitBytes: 4 * KiB,
        successStatus: 201,
        handler: async ({ ctx, body }) => {
          const b = bodyObject(body);
          const issues = unknownMembers(b, ["label"]);
          if (b.label !== undefined && typeof b.label !== "string")
            issues.push({ source: { pointer: "/label" }, rule: "type", message: "label must be a string." });
          if (issues.length)
            throw new ApiError("validation_failed", "The import cannot be created.", { issues });
          const res = await client.createImport(
            { label: (b.label as string | undefined) ?? "" },
            { context: ctx },
          );
          return { body: importsJson(res.import!) };
        },
      },
    ],
  };
}

/** The module in the gateway's module list. */
export const fromDeps: ModuleFactory = (deps) => importsModule({ client: deps.imports });
