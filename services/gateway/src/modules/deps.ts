/** What the gateway's modules are built from, and the shape of a module's factory. */
import type { DownstreamClients } from "../downstream.generated";
import type { GatewayModule } from "../http/route";
import type { IdentityRepository } from "./identity/identity.repository";

/**
 * The gateway's own store and one client per service it calls (src/downstream.generated.ts, from services.json):
 * `passport`, `events`, ... keyed by the proto service's name without "Service", in lower camelCase.
 */
export type ModuleDeps = { identity: IdentityRepository } & DownstreamClients;

/**
 * What each module file exports as `fromDeps`: the module made from the dependencies it keeps. It only keeps
 * them; its handlers use them (the route table is also described without any of them connected).
 */
export type ModuleFactory = (deps: ModuleDeps) => GatewayModule;
