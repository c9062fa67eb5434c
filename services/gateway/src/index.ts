export * from "./gateway";
export * from "./config";
export * from "./admin";
export * from "./routes";
export { IdentityRepository } from "./store/identity.repository";
export type { GatewayDB } from "./store/schema";
export { parseKeyText, digestOf, generateKeyText, SCOPES, type Scope } from "./auth/keys";
