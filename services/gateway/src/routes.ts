/**
 * The route table: the gateway's own routes, then each module's (src/modules/). The router, the scope
 * check, the 405/Allow answers and the body limits are all derived from it (src/http/app.ts); none of
 * them keeps a list of its own.
 */
import { PublicDocument } from "./http/compression";
import { etagOf } from "./http/middleware/security";
import type { GatewayModule, Route, RouteSpec } from "./http/route";
import { fakeModuleDeps, gatewayModules } from "./modules";
import { OPENAPI_DOCUMENT } from "./openapi.generated";

export {
  allowedMethods,
  KiB,
  MiB,
  type AuthMode,
  type GatewayModule,
  type Route,
  type RouteSpec,
} from "./http/route";

/** The OpenAPI document as sent: rendered once, each compressed variant made once (http/compression.ts). */
const OPENAPI_TEXT = JSON.stringify(OPENAPI_DOCUMENT);
const OPENAPI_JSON = new PublicDocument(
  "application/json; charset=utf-8",
  OPENAPI_TEXT,
  etagOf(OPENAPI_TEXT),
);

/** The gateway's own routes: they call no service. */
const META: GatewayModule = {
  name: "gateway",
  routes: [
    {
      // This API's OpenAPI document (services/gateway/openapi/openapi.yaml); no credential.
      operationId: "getOpenApiDocument",
      method: "GET",
      path: "/openapi.json",
      auth: "none",
      idempotent: false,
      successStatus: 200,
      handler: async () => ({ body: OPENAPI_JSON }),
    },
  ],
};

/** The table the app serves: the gateway's own routes followed by every module's. */
export function routeTable(modules: readonly GatewayModule[]): readonly Route[] {
  return [META, ...modules].flatMap((m) => m.routes);
}

/**
 * The route table as a description, without handlers: what the checks against the OpenAPI document and
 * the authorization matrix read. The same modules as the server's, built without a store or clients.
 */
export const ROUTES: readonly RouteSpec[] = routeTable(gatewayModules(fakeModuleDeps())).map(
  ({ handler: _handler, ...spec }) => spec,
);

/** The module each route of ROUTES comes from, by operationId ("gateway" for the gateway's own routes). */
export const ROUTE_MODULES: Readonly<Record<string, string>> = Object.fromEntries(
  [META, ...gatewayModules(fakeModuleDeps())].flatMap((m) => m.routes.map((r) => [r.operationId, m.name])),
);
