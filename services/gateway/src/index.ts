export * from "./gateway";
export * from "./config";
export * from "./modules/identity/admin";
export * from "./routes";
export { gatewayModules, type ModuleDeps } from "./modules";
export { IdentityRepository } from "./modules/identity/identity.repository";
export type { GatewayDB } from "./store/schema";
export { parseKeyText, digestOf, generateKeyText, SCOPES, type Scope } from "./modules/identity/keys";
export { passportJson } from "./modules/passport/mapping";
