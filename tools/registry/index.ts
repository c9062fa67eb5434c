/**
 * The registry of services (services.json at the repository root), validated
 * and typed for TypeScript readers: the local stack, the chart test and the
 * registry's own test. jest.config.js, tools/bundle.mjs and tools/gen-registry.mjs
 * read the JSON directly; the "tools" jest project checks it with parseRegistry.
 * Why JSON and what each field drives: docs/decisions/0011-service-registry.md.
 */
import fs from "node:fs";
import path from "node:path";
import { SERVICE_NAMES } from "./names.generated";

export const REPO_ROOT = path.resolve(__dirname, "..", "..");
export const REGISTRY_FILE = path.join(REPO_ROOT, "services.json");

/** Folders under services/ that are shared libraries, not services. */
export const SHARED_FOLDERS: readonly string[] = ["kit", "contract"];

/** A registered service's name; generated from services.json (tools/registry/names.generated.ts). */
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** gateway: the HTTP edge (exactly one). grpc: a service behind it. */
export type ServiceKind = "gateway" | "grpc";

export interface ServiceEntry<N extends string = ServiceName> {
  /** Lower-case words joined by "-"; also the folder name, the chart component and the jest project. */
  name: N;
  kind: ServiceKind;
  /** Always services/<name> (the image, the chart and the bundle rely on it). */
  folder: string;
  /** Default listening port: the HTTP port of the gateway, the gRPC port of a service. */
  port: number;
  /** The variable through which callers find a gRPC service (<NAME>_ADDR); null for the gateway. */
  addrEnv: string | null;
  /** Fully-qualified protobuf service type names it serves (each reports SERVING on grpc.health.v1). */
  protoServices: readonly string[];
  /** The Postgres schema it owns and migrates; null when it keeps no data. */
  schema: string | null;
  /** The gateway module that routes HTTP requests to it (services/gateway/src/modules/<module>); null when none. */
  gatewayModule: string | null;
  /** The registered services that may call it (network policies; the <NAME>_ADDR each caller receives). */
  callers: readonly N[];
}

export class RegistryError extends Error {
  constructor(
    readonly problems: readonly string[],
    header = "services.json is invalid",
  ) {
    super(`${header}:\n  ${problems.join("\n  ")}`);
    this.name = "RegistryError";
  }
}

const FIELDS = [
  "name",
  "kind",
  "folder",
  "port",
  "addrEnv",
  "protoServices",
  "schema",
  "gatewayModule",
  "callers",
] as const;
const NAME = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
const SCHEMA = /^[a-z][a-z0-9_]*$/;
const PROTO_SERVICE = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\.[A-Z][A-Za-z0-9]*$/;
/** Schemas no service may claim: the bus tables (@dpp/bus) and Postgres's own. */
const RESERVED_SCHEMAS = new Set(["bus", "public", "information_schema"]);

/** <NAME>_ADDR of a service name: variants-units → VARIANTS_UNITS_ADDR (the chart derives the same). */
export function addrEnvOf(name: string): string {
  return `${name.toUpperCase().replace(/-/g, "_")}_ADDR`;
}

/** The `npm start` variable that overrides a service's port: PORT for the gateway, <NAME>_PORT otherwise. */
export function portEnvOf(entry: Pick<ServiceEntry<string>, "name" | "kind">): string {
  return entry.kind === "gateway" ? "PORT" : `${entry.name.toUpperCase().replace(/-/g, "_")}_PORT`;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const isStringArray = (v: unknown): v is string[] =>
  Array.isArray(v) && v.every((x) => typeof x === "string");

/**
 * Checks the registry's shape and its rules, and returns its entries in file
 * order (the order of migrations). Throws a RegistryError naming every problem.
 */
export function parseRegistry(json: unknown): ServiceEntry<string>[] {
  const problems: string[] = [];
  if (!isObject(json)) throw new RegistryError(["the file must hold a JSON object"]);
  for (const k of Object.keys(json))
    if (k !== "services" && k !== "$comment") problems.push(`unknown top-level key "${k}"`);
  if (!Array.isArray(json.services) || json.services.length === 0)
    throw new RegistryError([...problems, `"services" must be a non-empty array`]);

  const entries: ServiceEntry<string>[] = [];
  json.services.forEach((raw: unknown, i: number) => {
    const at = isObject(raw) && typeof raw.name === "string" ? `service "${raw.name}"` : `services[${i}]`;
    const bad = (what: string) => problems.push(`${at}: ${what}`);
    if (!isObject(raw)) return bad("must be an object");
    for (const k of Object.keys(raw))
      if (!(FIELDS as readonly string[]).includes(k)) bad(`unknown field "${k}"`);
    for (const k of FIELDS) if (!(k in raw)) bad(`missing field "${k}"`);
    const before = problems.length;
    const { name, kind, folder, port, addrEnv, protoServices, schema, gatewayModule, callers } = raw;

    if (typeof name !== "string" || !NAME.test(name))
      bad(`name must be lower-case words joined by "-", got ${JSON.stringify(name)}`);
    else if (SHARED_FOLDERS.includes(name)) bad(`"${name}" is a shared library, not a service`);
    if (kind !== "gateway" && kind !== "grpc")
      bad(`kind must be "gateway" or "grpc", got ${JSON.stringify(kind)}`);
    if (folder !== `services/${String(name)}`) bad(`folder must be "services/${String(name)}"`);
    if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535)
      bad(`port must be an integer from 1 to 65535, got ${JSON.stringify(port)}`);
    if (kind === "gateway" && addrEnv !== null) bad("addrEnv must be null for the gateway");
    if (kind === "grpc" && typeof name === "string" && addrEnv !== addrEnvOf(name))
      bad(`addrEnv must be "${addrEnvOf(name)}", got ${JSON.stringify(addrEnv)}`);
    if (!isStringArray(protoServices)) bad("protoServices must be an array of strings");
    else {
      if (kind === "gateway" && protoServices.length > 0)
        bad("the gateway serves HTTP: protoServices must be []");
      if (kind === "grpc" && protoServices.length === 0) bad("protoServices must name at least one service");
      for (const p of protoServices)
        if (!PROTO_SERVICE.test(p)) bad(`protoServices: "${p}" is not a fully-qualified service name`);
    }
    if (schema !== null && (typeof schema !== "string" || !SCHEMA.test(schema)))
      bad(`schema must be null or a lower-case identifier, got ${JSON.stringify(schema)}`);
    else if (typeof schema === "string" && RESERVED_SCHEMAS.has(schema))
      bad(`schema "${schema}" is reserved`);
    if (gatewayModule !== null && (typeof gatewayModule !== "string" || !NAME.test(gatewayModule)))
      bad(`gatewayModule must be null or a module name, got ${JSON.stringify(gatewayModule)}`);
    if (kind === "gateway" && gatewayModule !== null) bad("gatewayModule must be null for the gateway");
    if (!isStringArray(callers)) bad("callers must be an array of service names");
    else {
      if (kind === "gateway" && callers.length > 0)
        bad("the gateway is reached from outside (ingress): callers must be []");
      if (new Set(callers).size !== callers.length) bad("callers lists a service twice");
      if (callers.includes(String(name))) bad("a service does not list itself as a caller");
      if (gatewayModule !== null && !callers.includes("gateway"))
        bad(`a service the gateway fronts lists "gateway" among its callers`);
    }
    if (problems.length === before) entries.push(raw as unknown as ServiceEntry<string>);
  });

  const names = entries.map((e) => e.name);
  const duplicates = <T>(values: T[]) => [...new Set(values.filter((v, i) => values.indexOf(v) !== i))];
  for (const n of duplicates(names)) problems.push(`service "${n}" is registered twice`);
  for (const p of duplicates(entries.map((e) => e.port)))
    problems.push(`port ${p} is the default of more than one service`);
  for (const s of duplicates(entries.flatMap((e) => (e.schema ? [e.schema] : []))))
    problems.push(`schema "${s}" is owned by more than one service`);
  for (const p of duplicates(entries.flatMap((e) => [...e.protoServices])))
    problems.push(`"${p}" is served by more than one service`);
  const gateways = entries.filter((e) => e.kind === "gateway").length;
  if (gateways !== 1 && problems.length === 0)
    problems.push(`exactly one service has kind "gateway" (found ${gateways})`);
  for (const e of entries)
    for (const c of e.callers)
      if (!names.includes(c)) problems.push(`service "${e.name}": caller "${c}" is not a registered service`);

  if (problems.length > 0) throw new RegistryError(problems);
  return entries;
}

/**
 * Problems between the registry and the tree: a folder under services/ (not a
 * shared library) without an entry, or an entry without its folder and src/main.ts.
 */
export function folderProblems(entries: readonly ServiceEntry<string>[], repoRoot = REPO_ROOT): string[] {
  const problems: string[] = [];
  const servicesDir = path.join(repoRoot, "services");
  const folders = fs
    .readdirSync(servicesDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && !SHARED_FOLDERS.includes(d.name))
    .map((d) => d.name);
  const names = new Set(entries.map((e) => e.name));
  for (const f of folders)
    if (!names.has(f))
      problems.push(`services/${f} has no entry in services.json (docs/adding-a-service.md)`);
  for (const e of entries) {
    if (!folders.includes(e.name))
      problems.push(`service "${e.name}" is registered but ${e.folder} does not exist`);
    else if (!fs.existsSync(path.join(repoRoot, e.folder, "src", "main.ts")))
      problems.push(`service "${e.name}": ${e.folder}/src/main.ts does not exist`);
  }
  return problems;
}

let cached: readonly ServiceEntry[] | undefined;

/** The validated registry, in file order. Throws when it is invalid or names.generated.ts is stale. */
export function loadRegistry(): readonly ServiceEntry[] {
  if (cached) return cached;
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(REGISTRY_FILE, "utf8"));
  } catch (err) {
    throw new RegistryError([
      `cannot read ${REGISTRY_FILE}: ${err instanceof Error ? err.message : String(err)}`,
    ]);
  }
  const entries = parseRegistry(json);
  const names = entries.map((e) => e.name);
  if (names.join(",") !== SERVICE_NAMES.join(","))
    throw new RegistryError(
      [
        `tools/registry/names.generated.ts lists ${SERVICE_NAMES.join(", ")}; services.json ${names.join(", ")}`,
      ],
      "tools/registry/names.generated.ts is stale (run `npm run -s gen:registry`)",
    );
  cached = Object.freeze(entries as ServiceEntry[]);
  return cached;
}

/** The gateway's entry. */
export function gatewayEntry(entries: readonly ServiceEntry[] = loadRegistry()): ServiceEntry {
  return entries.find((e) => e.kind === "gateway")!;
}

/** The services `name` may call: those listing it among their callers (it receives their <NAME>_ADDR). */
export function calleesOf<N extends string>(entries: readonly ServiceEntry<N>[], name: N): ServiceEntry<N>[] {
  return entries.filter((e) => e.callers.includes(name));
}
