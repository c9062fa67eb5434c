export * from "./gateway";
export * from "./config";
export * from "./modules/identity/admin";
export * from "./routes";
export { gatewayModules, type ModuleDeps } from "./modules";
export { IdentityRepository } from "./modules/identity/identity.repository";
export {
  generateAuthorityTokenText,
  issueAuthorityToken,
  revokeAuthorityToken,
  AUTHORITY_TOKEN_MAX_SECONDS,
} from "./modules/identity/authority";
export type { GatewayDB } from "./store/schema";
export { parseKeyText, digestOf, generateKeyText, SCOPES, type Scope } from "./modules/identity/keys";
export { passportJson } from "./modules/passport/mapping";
export { OPENAPI_DOCUMENT } from "./openapi.generated";
export { compressAnswer, COMPRESS_MIN_BYTES } from "./http/compression";
export { addPerson } from "./review/people";
