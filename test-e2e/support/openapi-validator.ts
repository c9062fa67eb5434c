/**
 * Checks every response of the end-to-end suite against the OpenAPI document as served
 * (services/gateway/openapi/openapi.yaml with each service's own operations: the gateway's OPENAPI_DOCUMENT). The harness calls
 * `assertResponseMatchesContract` inside `request()`, so a response the document does
 * not describe fails the test that received it. See docs/decisions/0008-openapi-contract.md.
 *
 * - The request is matched to an operation by method and path template (a literal
 *   segment wins over a parameter).
 * - The status must be documented for that operation; its required headers
 *   (Request-Id on every response) must be present and valid; a JSON body must
 *   validate against the documented schema (ajv, JSON Schema 2020-12, formats on).
 * - Stricter than the published document on one point: an object schema that lists
 *   `properties` and says nothing about `additionalProperties` is treated as closed
 *   here, so the gateway cannot send a field the document does not describe. Objects
 *   stay open on the wire for clients (the spec's "objects are open").
 * - A path or method the document does not describe (deliberate 404/405 probes) must
 *   answer an error envelope whose code is documented with that status (405 also
 *   needs Allow, as the introduction says).
 * - Every error body's code must be documented with the response's HTTP status
 *   (ErrorCode's x-http-status).
 */
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { OPENAPI_DOCUMENT } from "@dpp/gateway";

/** The document the gateway serves, the source of truth. */
export const SERVED_DOCUMENT: Json = OPENAPI_DOCUMENT;
const BASE = "https://contract.dpp.test/openapi";
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

export interface ObservedResponse {
  method: string;
  /** The request path under /v1, with its query string. */
  path: string;
  status: number;
  headers: Headers;
  /** Parsed JSON body, or undefined when the body is empty or not JSON. */
  body: unknown;
  text: string;
}

interface OperationEntry {
  method: string;
  template: string;
  regex: RegExp;
  literalSegments: number;
  operationId: string;
  /** JSON Pointer (inside the document) of each documented response, by status key. */
  responses: Record<string, string>;
}

type Json = any;

const isObject = (v: unknown): v is Record<string, Json> =>
  v !== null && typeof v === "object" && !Array.isArray(v);
const pointerToken = (s: string) => s.replace(/~/g, "~0").replace(/\//g, "~1");

/** "#/components/schemas/X" → the closed or the open form of X in the validator's $defs. */
function rewriteRef(ref: string, open: boolean): string {
  const m = /^#\/components\/schemas\/([^/]+)$/.exec(ref);
  if (!m) throw new Error(`openapi-validator: unsupported $ref ${ref}`);
  return `${BASE}#/$defs/${m[1]}${open ? "__open" : ""}`;
}

/**
 * A copy of a schema in which undeclared object properties are refused (see above).
 * `open` leaves the top level open: it is an allOf member, closed by its holder
 * (unevaluatedProperties sees what the members evaluated).
 */
function closeSchema(schema: Json, open = false): Json {
  if (Array.isArray(schema)) return schema.map((s) => closeSchema(s));
  if (!isObject(schema)) return schema;
  const out: Record<string, Json> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === "$ref" && typeof v === "string") out[k] = rewriteRef(v, open);
    else if ((k === "properties" || k === "patternProperties" || k === "$defs") && isObject(v))
      out[k] = Object.fromEntries(Object.entries(v).map(([name, s]) => [name, closeSchema(s)]));
    else if (
      ["items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"].includes(k)
    )
      out[k] = isObject(v) ? closeSchema(v) : v;
    else if (k === "prefixItems") out[k] = (v as Json[]).map((s) => closeSchema(s));
    // The members of an open schema's oneOf/anyOf are open too: the holder closes what they evaluated.
    else if (k === "anyOf" || k === "oneOf") out[k] = (v as Json[]).map((s) => closeSchema(s, open));
    else if (k === "allOf") out[k] = (v as Json[]).map((s) => closeSchema(s, true));
    else out[k] = v;
  }
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const declaresObject = types.includes("object") && isObject(schema.properties);
  const saysOpenness = "additionalProperties" in schema || "unevaluatedProperties" in schema;
  if (!open && !saysOpenness && (declaresObject || Array.isArray(schema.allOf)))
    out.unevaluatedProperties = false;
  return out;
}

function resolvePointer(doc: Json, pointer: string): Json {
  return pointer
    .split("/")
    .slice(1)
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((at, key) => (at === undefined ? undefined : at[key]), doc);
}

/** Follows "#/components/..." references (responses, parameters, headers) to their target pointer. */
function follow(doc: Json, pointer: string): string {
  for (let i = 0; i < 10; i++) {
    const node = resolvePointer(doc, pointer);
    if (!isObject(node) || typeof node.$ref !== "string") return pointer;
    pointer = node.$ref.replace(/^#/, "");
  }
  throw new Error(`openapi-validator: $ref cycle at ${pointer}`);
}

export class ContractValidator {
  private readonly ajv: Ajv2020;
  private readonly operations: OperationEntry[];
  private readonly statusOfCode: Record<string, number>;
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(private readonly doc: Json) {
    this.ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true });
    addFormats(this.ajv);
    // The category schemas' own format: a GTIN as sent (its check digit is the passport service's rule,
    // tested there); here its shape.
    this.ajv.addFormat("gtin", /^([0-9]{8}|[0-9]{12,14})$/);
    const schemas: Record<string, Json> = doc.components?.schemas ?? {};
    const defs: Record<string, Json> = {};
    for (const [name, s] of Object.entries(schemas)) {
      defs[name] = closeSchema(s);
      defs[`${name}__open`] = closeSchema(s, true);
    }
    this.ajv.addSchema({ $id: BASE, $defs: defs });
    this.statusOfCode = schemas.ErrorCode?.["x-http-status"] ?? {};
    this.operations = Object.entries(doc.paths as Record<string, Json>).flatMap(([template, item]) =>
      METHODS.filter((m) => isObject(item[m])).map((m) => {
        const segments = template.split("/").filter(Boolean);
        const pattern = segments
          .map((s) => (/^\{\w+\}$/.test(s) ? "[^/]+" : s.replace(/[.*+?^$()|[\]\\]/g, "\\$&")))
          .join("/");
        const base = `/paths/${pointerToken(template)}/${m}/responses`;
        return {
          method: m.toUpperCase(),
          template,
          regex: new RegExp(`^/${pattern}/?$`),
          literalSegments: segments.filter((s) => !s.startsWith("{")).length,
          operationId: item[m].operationId,
          responses: Object.fromEntries(
            Object.keys(item[m].responses ?? {}).map((status) => [
              status,
              follow(doc, `${base}/${pointerToken(status)}`),
            ]),
          ),
        };
      }),
    );
  }

  static fromSource(doc: Json = SERVED_DOCUMENT): ContractValidator {
    return new ContractValidator(structuredClone(doc));
  }

  private validatorFor(pointer: string): ValidateFunction {
    let v = this.compiled.get(pointer);
    if (!v) {
      v = this.ajv.compile(closeSchema(resolvePointer(this.doc, pointer)));
      this.compiled.set(pointer, v);
    }
    return v;
  }

  /** Problems of one response against the document; [] when it matches. */
  check(r: ObservedResponse): { where: string; problems: string[] } {
    const pathOnly = r.path.split("?")[0]!;
    const method = r.method.toUpperCase();
    const samePath = this.operations
      .filter((o) => o.regex.test(pathOnly))
      .sort((a, b) => b.literalSegments - a.literalSegments);
    const viaGet = method === "HEAD" ? "GET" : method;
    const op = samePath.find((o) => o.method === viaGet);
    if (!op) {
      const why = samePath.length
        ? `${method} is not documented on ${samePath[0]!.template}`
        : "no documented path";
      return {
        where: `${method} ${pathOnly} (${why})`,
        problems: this.checkUndocumented(r, samePath.length > 0, !percentEncodedUtf8(pathOnly)),
      };
    }
    const where = `${method} ${op.template} → ${r.status} (${op.operationId})`;
    const key = [String(r.status), `${String(r.status)[0]}XX`, "default"].find((k) => k in op.responses);
    if (!key)
      return {
        where,
        problems: [
          `status ${r.status} is not documented for ${op.operationId} (documented: ${Object.keys(op.responses).join(", ")})`,
          ...this.checkErrorCode(r),
        ],
      };
    return {
      where,
      problems: [...this.checkResponse(op.responses[key]!, r, method), ...this.checkErrorCode(r)],
    };
  }

  private checkUndocumented(r: ObservedResponse, knownPath: boolean, badEncoding: boolean): string[] {
    const problems: string[] = [];
    if (r.status < 400) problems.push(`a ${r.status} answer on an undocumented operation`);
    // The gateway reads the path before the method: a parameter that is not percent-encoded UTF-8 is 400 there.
    const encodingRefused =
      badEncoding &&
      r.status === 400 &&
      (r.body as { error?: { code?: string } } | undefined)?.error?.code === "invalid_request";
    if (knownPath && r.status !== 405 && !encodingRefused)
      problems.push(`expected 405 for a documented path and another method`);
    // The introduction documents these answers for every path: the envelope, and Allow on a 405.
    problems.push(...this.checkBody(this.validatorFor("/components/schemas/ErrorEnvelope"), r));
    if (!r.headers.get("request-id")) problems.push("missing header Request-Id");
    if (r.status === 405 && !r.headers.get("allow")) problems.push("missing header Allow");
    return [...problems, ...this.checkErrorCode(r)];
  }

  /** The error code of any error body must be documented with this HTTP status. */
  private checkErrorCode(r: ObservedResponse): string[] {
    const code = isObject(r.body) && isObject(r.body.error) ? r.body.error.code : undefined;
    // 304 Not Modified (a conditional GET of a public document) has no body by definition.
    if (r.status >= 300 && r.status !== 304 && code === undefined)
      return [`a ${r.status} answer without an error envelope`];
    if (code === undefined) return [];
    const documented = this.statusOfCode[code];
    if (documented === undefined) return [`error code ${JSON.stringify(code)} is not in the ErrorCode enum`];
    if (documented !== r.status)
      return [`error code ${code} is documented with ${documented}, answered with ${r.status}`];
    return [];
  }

  private checkResponse(pointer: string, r: ObservedResponse, method: string): string[] {
    const problems: string[] = [];
    const response = resolvePointer(this.doc, pointer);
    for (const [name, raw] of Object.entries((response.headers ?? {}) as Record<string, Json>)) {
      const hp = follow(this.doc, `${pointer}/headers/${pointerToken(name)}`);
      const header = resolvePointer(this.doc, hp);
      const value = r.headers.get(name);
      if (value === null) {
        if (header.required) problems.push(`missing header ${name}`);
        continue;
      }
      const schema = header.schema ?? raw.schema;
      if (!schema) continue;
      const typed = schema.type === "integer" || schema.type === "number" ? Number(value) : value;
      const v = this.validatorFor(`${hp}/schema`);
      if (!v(typed))
        problems.push(`header ${name}: ${JSON.stringify(value)} ${this.ajv.errorsText(v.errors)}`);
    }
    const content = response.content as Record<string, Json> | undefined;
    if (method === "HEAD") return problems;
    if (!content) {
      if (r.text) problems.push(`a body where the document describes none: ${r.text.slice(0, 200)}`);
      return problems;
    }
    const type = (r.headers.get("content-type") ?? "").split(";")[0]!.trim();
    if (!(type in content))
      return [
        ...problems,
        `content type ${JSON.stringify(type)} is not documented (${Object.keys(content).join(", ")})`,
      ];
    if (type !== "application/json") return problems;
    return [
      ...problems,
      ...this.checkBody(this.validatorFor(`${pointer}/content/${pointerToken(type)}/schema`), r),
    ];
  }

  private checkBody(v: ValidateFunction, r: ObservedResponse): string[] {
    if (r.body === undefined) return [`the body is not JSON: ${JSON.stringify(r.text.slice(0, 200))}`];
    if (v(r.body)) return [];
    return (v.errors ?? []).slice(0, 10).map((e) => {
      const extra =
        e.keyword === "unevaluatedProperties" || e.keyword === "additionalProperties"
          ? ` (${JSON.stringify((e.params as Record<string, unknown>).unevaluatedProperty ?? (e.params as Record<string, unknown>).additionalProperty)})`
          : "";
      return `body${e.instancePath || ""} ${e.message}${extra} [schema ${e.schemaPath}]`;
    });
  }
}

let shared: ContractValidator | undefined;

/** Throws a readable error when the response does not match the OpenAPI document. */
export function assertResponseMatchesContract(r: ObservedResponse): void {
  shared ??= ContractValidator.fromSource();
  const { where, problems } = shared.check(r);
  if (problems.length === 0) return;
  throw new Error(
    `Response does not match the OpenAPI document (services/gateway/openapi/openapi.yaml)\n` +
      `  ${where}\n  request: ${r.method.toUpperCase()} /v1${r.path}\n` +
      problems.map((p) => `  - ${p}`).join("\n") +
      `\n  body: ${r.text.length > 600 ? `${r.text.slice(0, 600)}…` : r.text}`,
  );
}

/** Whether every segment of a path is percent-encoded UTF-8 (what decodeURIComponent accepts). */
function percentEncodedUtf8(path: string): boolean {
  try {
    for (const segment of path.split("/")) decodeURIComponent(segment);
    return true;
  } catch {
    return false;
  }
}
