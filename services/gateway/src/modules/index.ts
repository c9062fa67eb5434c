/**
 * The gateway's modules, one per downstream API (see services/gateway/README.md, "Adding a gateway
 * module"). This is the one list of them: the server (gateway.ts) and the described route table
 * (routes.ts) both build it here.
 */
import type { GatewayModule } from "../http/route";
import { eventsModule, type EventsClient } from "./events/module";
import type { IdentityRepository } from "./identity/identity.repository";
import { identityModule } from "./identity/module";
import { passportModule, type PassportClient } from "./passport/module";

/** What the modules are built from: the gateway's own store and one client per downstream service. */
export interface ModuleDeps {
  identity: IdentityRepository;
  passport: PassportClient;
  events: EventsClient;
}

export function gatewayModules(deps: ModuleDeps): GatewayModule[] {
  return [
    // Capabilities count published passports: identity is handed passport's client explicitly.
    identityModule({ repo: deps.identity, passport: deps.passport }),
    passportModule({ client: deps.passport }),
    eventsModule({ client: deps.events }),
  ];
}
