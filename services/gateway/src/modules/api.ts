/**
 * What a gateway module is written with, for a module in its service's folder (services/<name>/gateway/,
 * imported as `@dpp/gateway/modules`): the route types, the JSON and request helpers of the gateway's own
 * modules, the dependencies' type and fakeModuleDeps for its tests. docs/adding-a-service.md.
 */
export type { AuthMode, GatewayModule, HandlerInput, HandlerResult, Route, RouteSpec } from "../http/route";
export { KiB, MiB } from "../http/route";
export { list, orNull, parseJson, rawList, RawJson, rfc3339, rfc3339OrNull } from "../http/json";
export {
  bodyObject,
  bodyRefusal,
  conditionalFields,
  isObject,
  many,
  noBody,
  parseRfc3339,
  single,
  unknownMembers,
} from "../http/request";
export type { ModuleDeps, ModuleFactory } from "./deps";
export { fakeModuleDeps } from "./fake-deps";
