/**
 * The one check of what a request carries outside its body, for every route: path parameters, the query string
 * and the headers. Text that no service could store (U+0000, an unpaired surrogate) or that is not UTF-8 is
 * 400 invalid_request with the parameter or header named, before anything looks it up (docs/decisions/0019).
 * The body has its own reader (body.ts and strict-json.ts).
 */
import type { NextFunction, Request, Response } from "express";
import { ApiError, type Issue } from "@dpp/contract";
import { textProblem } from "../strict-json";

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
 * check reads the string itself.
 */
function queryProblem(url: string): ApiError | undefined {
  const q = url.indexOf("?");
  if (q < 0) return undefined;
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
  }
  return undefined;
}

export function inputHygiene() {
  return (req: Request, _res: Response, next: NextFunction) => {
    // Path parameters: express decoded them strictly already (invalid UTF-8 is a 400 there).
    for (const [parameter, value] of Object.entries(req.params as Record<string, string>)) {
      const problem = textProblem(value);
      if (problem)
        return next(
          refuse(
            { source: { parameter }, ...problem },
            `The path parameter ${parameter} holds text that is refused.`,
          ),
        );
    }
    const query = queryProblem(req.originalUrl);
    if (query) return next(query);
    // Node refuses NUL, CR and LF in header values itself; this holds when its lenient parser is turned on.
    for (const [header, values] of Object.entries(req.headersDistinct)) {
      for (const value of values ?? []) {
        const problem = textProblem(value);
        if (problem)
          return next(
            refuse({ source: { header }, ...problem }, `The header ${header} holds text that is refused.`),
          );
      }
    }
    next();
  };
}
