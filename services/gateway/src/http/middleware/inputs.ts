/**
 * The one check of what a request carries outside its body, for every route: path parameters, the query string
 * and the headers. Text that no service could store (U+0000, an unpaired surrogate) or that is not UTF-8 is
 * 400 invalid_request with the parameter or header named, before anything looks it up (docs/decisions/0019).
 * The body has its own reader (body.ts and strict-json.ts). The headers are read once, in one pass
 * (`headerFacts`), for this check and for the steps that read a header by name.
 */
import type { Request } from "express";
import { ApiError, type Issue } from "@dpp/contract";
import type { QueryParameter, RouteSpec, Step } from "../route";
import { textProblem } from "../strict-json";
import type { HeaderFacts, RequestLocals } from "./locals";

const refuse = (issue: Issue, message: string) =>
  new ApiError("invalid_request", message, { issues: [issue] });

/** Decodes one query component strictly (`+` is a space); undefined when it is not percent-encoded UTF-8. */
function decodeComponent(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw.replace(/\+/g, " "));
  } catch {
    return undefined;
  }
}

/**
 * Problems of the raw query string. Express's query parser replaces what it cannot decode with U+FFFD, so the
 * check reads the string itself. Text that is refused comes first; then every parameter the operation does not
 * read (`declared`) is listed, in the order sent.
 */
function queryProblem(url: string, declared: Declared): ApiError | undefined {
  const q = url.indexOf("?");
  if (q < 0) return undefined;
  let unknown: Map<string, Issue> | undefined;
  for (const pair of url.slice(q + 1).split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    const rawName = eq < 0 ? pair : pair.slice(0, eq);
    const name = decodeComponent(rawName);
    const value = eq < 0 ? "" : decodeComponent(pair.slice(eq + 1));
    const parameter = name !== undefined && textProblem(name) === undefined ? name : rawName;
    if (name === undefined || value === undefined)
      return refuse(
        { source: { parameter }, rule: "utf8", message: "Query parameters must be percent-encoded UTF-8." },
        `The query parameter ${parameter} is not percent-encoded UTF-8.`,
      );
    const problem = textProblem(name) ?? textProblem(value);
    if (problem)
      return refuse(
        { source: { parameter }, ...problem },
        `The query parameter ${parameter} holds text that is refused.`,
      );
    if (!declared.has(name) && !unknown?.has(name))
      (unknown ??= new Map()).set(name, unknownParameter(name, declared));
  }
  if (!unknown) return undefined;
  const issues = [...unknown.values()];
  return new ApiError(
    "invalid_request",
    issues.length === 1
      ? issues[0]!.message!
      : `The query parameters ${[...unknown.keys()].map((n) => JSON.stringify(n)).join(", ")} are not read by this operation; ${takes(declared)}`,
    { issues },
  );
}

/** The query parameters an operation reads. */
type Declared = ReadonlyMap<string, QueryParameter>;

/** What an operation's query takes, as a sentence. */
const takes = (declared: Declared) =>
  declared.size === 0
    ? "it takes no query parameter."
    : `it takes ${[...declared.keys()].map((d) => JSON.stringify(d)).join(", ")}.`;

/**
 * The issue of a parameter the operation does not read. A name with brackets (`status[]`, `type[0]`, `status[in]`:
 * what "extended" query parsers make of arrays and objects) says how to send the parameter it was meant to be.
 */
function unknownParameter(name: string, declared: Declared): Issue {
  const bracket = name.indexOf("[");
  const meant = bracket > 0 ? name.slice(0, bracket) : "";
  const kind = declared.get(meant);
  const message =
    kind === undefined
      ? `The query parameter ${JSON.stringify(name)} is not read by this operation; ${takes(declared)}`
      : `The query parameter ${JSON.stringify(name)} is not read: brackets are not query syntax here; ` +
        (kind === "repeatable"
          ? `send ${meant}=<value>, repeated for several values (${meant}=a&${meant}=b).`
          : `send ${meant}=<value>, once.`);
  return { source: { parameter: name }, rule: "unknown_parameter", message };
}

/** The headers read by name (`headerFacts`), each with its name's length: most names are told apart by it. */
const READ = [
  ["authorization", "authorization"],
  ["expected-version", "expectedVersion"],
  ["if-match", "ifMatch"],
] as const;

/**
 * The headers the steps read, from one pass over the raw headers the first time a step asks: every value of
 * Authorization, Expected-Version and If-Match (as `req.headersDistinct` gives them), and whether any header
 * holds text that is refused.
 */
export function headerFacts(req: Request, l: RequestLocals): HeaderFacts {
  if (l.headers) return l.headers;
  const facts: HeaderFacts = {
    authorization: undefined,
    expectedVersion: undefined,
    ifMatch: undefined,
    refusedText: false,
  };
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    if (!facts.refusedText && textProblem(value) !== undefined) facts.refusedText = true;
    for (const [lower, field] of READ)
      if (name.length === lower.length && name.toLowerCase() === lower) {
        const values = facts[field];
        if (values) values.push(value);
        else facts[field] = [value];
      }
  }
  return (l.headers = facts);
}

/** The refusal of the first header (in `req.headersDistinct`'s order) that holds text that is refused. */
function headerProblem(req: Request): ApiError | undefined {
  // Node refuses NUL, CR and LF in header values itself; this holds when its lenient parser is turned on.
  for (const [header, values] of Object.entries(req.headersDistinct)) {
    for (const value of values ?? []) {
      const problem = textProblem(value);
      if (problem)
        return refuse({ source: { header }, ...problem }, `The header ${header} holds text that is refused.`);
    }
  }
  return undefined;
}

/**
 * The check of every route: path parameters, then the query string (its text, then the parameters the route does
 * not read), then the headers.
 */
export function inputHygiene(spec: RouteSpec): Step {
  const declared: Declared = new Map(Object.entries(spec.query ?? {}));
  return (req, _res, l) => {
    // Path parameters: the router decoded them strictly already (invalid UTF-8 is a 400 there).
    const params = req.params as Record<string, string>;
    for (const parameter in params) {
      const problem = textProblem(params[parameter]!);
      if (problem)
        throw refuse(
          { source: { parameter }, ...problem },
          `The path parameter ${parameter} holds text that is refused.`,
        );
    }
    const query = queryProblem(req.originalUrl, declared);
    if (query) throw query;
    if (headerFacts(req, l).refusedText) {
      const problem = headerProblem(req);
      if (problem) throw problem;
    }
  };
}
