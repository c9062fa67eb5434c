/**
 * The one JSON reader of request bodies (docs/decisions/0019). It reads the bytes as strict UTF-8 and parses them
 * with bounds, so that nothing a handler or a service receives can make it fail later:
 *
 * - invalid UTF-8, malformed JSON (strict: an object or an array at the top), a duplicate member name, nesting
 *   deeper than `maxDepth`, an object with more than `maxMembers` members or an array with more than `maxItems`
 *   items → a `refusal` (400 invalid_request: the body cannot be understood as one document);
 * - a string (a value or a member name) holding U+0000 or an unpaired surrogate → an `issue` at its JSON Pointer
 *   (422 validation_failed: the document is understood, a field of it is refused). Every such string is listed.
 *
 * The parser recurses once per level, so the depth bound is also its stack bound. Member names are set as own
 * data properties (`__proto__` included), as JSON.parse does.
 */
import { pointerToken, type Issue } from "@dpp/contract";

export interface JsonLimits {
  /** Deepest nesting of objects and arrays (the top-level value is at depth 1). */
  maxDepth: number;
  /** Most members of one object. */
  maxMembers: number;
  /** Most items of one array. */
  maxItems: number;
}

/** The bounds of every request body (documented in the OpenAPI document and decision 0019). */
export const JSON_LIMITS: JsonLimits = { maxDepth: 32, maxMembers: 1000, maxItems: 10_000 };

/** Why a body cannot be understood: `rule` names it, `pointer` says where (the body itself for syntax). */
export interface JsonRefusal {
  rule: "utf8" | "json_syntax" | "duplicate_member" | "max_depth" | "max_members" | "max_items";
  pointer: string;
  message: string;
}

export type StrictJsonResult =
  { ok: true; value: unknown; issues: Issue[] } | { ok: false; refusal: JsonRefusal };

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** Decodes strict UTF-8 (a leading BOM is dropped) and parses; see the file comment. */
export function parseStrictJsonBytes(bytes: Uint8Array, limits: JsonLimits = JSON_LIMITS): StrictJsonResult {
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return {
      ok: false,
      refusal: { rule: "utf8", pointer: "", message: "The request body is not valid UTF-8." },
    };
  }
  return parseStrictJson(text, limits);
}

/** A character no stored text may hold: U+0000, or a surrogate that is not half of a pair. */
// eslint-disable-next-line no-control-regex -- U+0000 is exactly what it looks for
const FORBIDDEN = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why `s` cannot be stored as text, or undefined when it can. */
export function textProblem(
  s: string,
): { rule: "nul_character" | "lone_surrogate"; message: string } | undefined {
  const m = FORBIDDEN.exec(s);
  if (!m) return undefined;
  return m[0] === "\u0000"
    ? { rule: "nul_character", message: "Text may not contain the NUL character (U+0000)." }
    : {
        rule: "lone_surrogate",
        message: "Text may not contain an unpaired UTF-16 surrogate (\\uD800 to \\uDFFF alone).",
      };
}

class Refused extends Error {
  constructor(readonly refusal: JsonRefusal) {
    super(refusal.message);
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
// eslint-disable-next-line no-control-regex -- JSON strings may not hold raw control characters
const PLAIN = /[^"\\\u0000-\u001f]*/y;
const ESCAPES: Record<string, string> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};
const MAX_ISSUES = 100;

export function parseStrictJson(text: string, limits: JsonLimits = JSON_LIMITS): StrictJsonResult {
  let i = 0;
  const path: (string | number)[] = [];
  const issues: Issue[] = [];
  const pointer = (extra?: string | number) =>
    [...path, ...(extra === undefined ? [] : [extra])].map((t) => `/${pointerToken(t)}`).join("");

  const syntax = (what: string): never => {
    throw new Refused({
      rule: "json_syntax",
      pointer: "",
      message: `The request body is not valid JSON: ${what} at position ${i}.`,
    });
  };
  const ws = () => {
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else return;
    }
  };
  const checkText = (s: string, where: string) => {
    const problem = textProblem(s);
    if (problem && issues.length < MAX_ISSUES) issues.push({ source: { pointer: where }, ...problem });
  };

  const string = (): string => {
    i++; // the opening quote
    let out = "";
    for (;;) {
      PLAIN.lastIndex = i;
      const run = PLAIN.exec(text)![0];
      out += run;
      i += run.length;
      const c = text[i];
      if (c === '"') {
        i++;
        return out;
      }
      if (c === "\\") {
        const e = text[i + 1];
        if (e === "u") {
          const hex = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) syntax("a malformed \\u escape");
          out += String.fromCharCode(parseInt(hex, 16));
          i += 6;
        } else if (e !== undefined && ESCAPES[e] !== undefined) {
          out += ESCAPES[e];
          i += 2;
        } else syntax("a malformed escape");
      } else if (c === undefined) syntax("an unterminated string");
      else syntax("a control character in a string");
    }
  };

  const value = (depth: number): unknown => {
    ws();
    const c = text[i];
    if (c === "{" || c === "[") {
      if (depth > limits.maxDepth)
        throw new Refused({
          rule: "max_depth",
          pointer: pointer(),
          message: `The request body nests objects and arrays deeper than ${limits.maxDepth} levels.`,
        });
      return c === "{" ? object(depth) : array(depth);
    }
    if (c === '"') {
      const s = string();
      checkText(s, pointer());
      return s;
    }
    if (text.startsWith("true", i)) return ((i += 4), true);
    if (text.startsWith("false", i)) return ((i += 5), false);
    if (text.startsWith("null", i)) return ((i += 4), null);
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m) return syntax(c === undefined ? "an unexpected end" : "an unexpected character");
    i += m[0].length;
    return Number(m[0]);
  };

  const object = (depth: number): Record<string, unknown> => {
    i++;
    const out: Record<string, unknown> = {};
    const seen = new Set<string>();
    ws();
    if (text[i] === "}") return (i++, out);
    for (;;) {
      ws();
      if (text[i] !== '"') syntax("a member name was expected");
      const key = string();
      if (seen.has(key))
        throw new Refused({
          rule: "duplicate_member",
          pointer: pointer(key),
          message: `The member ${JSON.stringify(key)} appears twice in one object; send each member once.`,
        });
      seen.add(key);
      if (seen.size > limits.maxMembers)
        throw new Refused({
          rule: "max_members",
          pointer: pointer(),
          message: `An object of the request body has more than ${limits.maxMembers} members.`,
        });
      checkText(key, pointer(key));
      ws();
      if (text[i] !== ":") syntax("':' was expected");
      i++;
      path.push(key);
      const v = value(depth + 1);
      path.pop();
      Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
      ws();
      if (text[i] === ",") i++;
      else if (text[i] === "}") return (i++, out);
      else syntax("',' or '}' was expected");
    }
  };

  const array = (depth: number): unknown[] => {
    i++;
    const out: unknown[] = [];
    ws();
    if (text[i] === "]") return (i++, out);
    for (;;) {
      if (out.length >= limits.maxItems)
        throw new Refused({
          rule: "max_items",
          pointer: pointer(),
          message: `An array of the request body has more than ${limits.maxItems} items.`,
        });
      path.push(out.length);
      out.push(value(depth + 1));
      path.pop();
      ws();
      if (text[i] === ",") i++;
      else if (text[i] === "]") return (i++, out);
      else syntax("',' or ']' was expected");
    }
  };

  try {
    ws();
    // Strict, like the parser it replaces: the document is an object or an array.
    if (text[i] !== "{" && text[i] !== "[") syntax("an object or an array was expected");
    const v = value(1);
    ws();
    if (i < text.length) syntax("an unexpected character after the document");
    return { ok: true, value: v, issues };
  } catch (err) {
    if (err instanceof Refused) return { ok: false, refusal: err.refusal };
    throw err;
  }
}
