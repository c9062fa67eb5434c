/**
 * The types the integrator flow (flow.ts) is written against. In the repository they are the SDK's
 * generated types; generated-client.e2e.test.ts replaces this module with the types
 * openapi-typescript generates from the document the running stack serves.
 */
export type { components, paths } from "@dpp/client/openapi";
