/**
 * The gateway's modules, one per downstream API (see services/gateway/README.md, "Gateway modules"). The list
 * is generated from services.json and the module folders (index.generated.ts): the server (gateway.ts) and the
 * described route table (routes.ts) both build it here.
 */
import type { GatewayModule } from "../http/route";
import type { ModuleDeps } from "./deps";
import { MODULE_FACTORIES } from "./index.generated";

export type { ModuleDeps, ModuleFactory } from "./deps";
export { fakeModuleDeps } from "./fake-deps";

export function gatewayModules(deps: ModuleDeps): GatewayModule[] {
  return MODULE_FACTORIES.map((make) => make(deps));
}
