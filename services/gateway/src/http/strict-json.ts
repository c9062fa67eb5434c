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
 *
 * Most bodies are none of the above, and for them the engine's own JSON.parse (native, an order of magnitude
 * faster) gives the same value: `parseStrictJson` first tries JSON.parse and checks what it cannot see (the top
 * level, the bounds, member names counted in the text against those the value kept, the text of strings when an
 * escape or a surrogate could make one refused). Anything it finds, or JSON.parse refusing the text, hands the
 * text to the strict parser, which says exactly what and where; so every refusal is the strict parser's.
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
  | {
      ok: true;
      value: unknown;
      /** The first MAX_ISSUES issues found. */
      issues: Issue[];
      /** The number of issues found, when more than `issues` lists. */
      totalIssues?: number;
    }
  | { ok: false; refusal: JsonRefusal };

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
  const value = quickParse(text, limits);
  return value === undefined ? parseStrictly(text, limits) : { ok: true, value, issues: [] };
}

/** Could a string of this text hold U+0000 or a lone surrogate: an escape, or a surrogate written as is. */
// eslint-disable-next-line no-control-regex -- U+0000 is exactly what it looks for
const MAYBE_FORBIDDEN = /\\u|[\u0000\uD800-\uDFFF]/;

/**
 * The document as JSON.parse reads it, when the strict parser would accept it as it is (same value, no issue);
 * undefined when JSON.parse refuses it or any check fails (the strict parser then says why, or accepts it).
 */
function quickParse(text: string, limits: JsonLimits): object | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== "object") return undefined;
  const strings = MAYBE_FORBIDDEN.test(text);
  const kept = membersWithin(value, 1, limits, strings);
  // A member name given twice is kept once by JSON.parse: the text has more names than the value.
  if (kept < 0 || kept !== memberNames(text)) return undefined;
  return value;
}

/**
 * The members of every object in `v` (what JSON.parse kept), or -1 when an object or array is deeper than
 * maxDepth, an object has more than maxMembers members, an array more than maxItems items, or (`strings`) a
 * string or member name is text the strict parser refuses.
 */
function membersWithin(v: unknown, depth: number, limits: JsonLimits, strings: boolean): number {
  if (typeof v === "string") return strings && FORBIDDEN.test(v) ? -1 : 0;
  if (v === null || typeof v !== "object") return 0;
  if (depth > limits.maxDepth) return -1;
  let members = 0;
  if (Array.isArray(v)) {
    if (v.length > limits.maxItems) return -1;
    for (const item of v) {
      const n = membersWithin(item, depth + 1, limits, strings);
      if (n < 0) return -1;
      members += n;
    }
    return members;
  }
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  if (keys.length > limits.maxMembers) return -1;
  members = keys.length;
  for (const key of keys) {
    if (strings && FORBIDDEN.test(key)) return -1;
    const n = membersWithin(o[key], depth + 1, limits, strings);
    if (n < 0) return -1;
    members += n;
  }
  return members;
}

/**
 * Member names in a text JSON.parse accepted: strings followed by ':'. Every '"' outside a string opens one, so
 * the text is read string by string; a '"' inside one is escaped by an odd run of backslashes before it.
 */
function memberNames(text: string): number {
  let names = 0;
  let open = text.indexOf('"');
  while (open !== -1) {
    let close = text.indexOf('"', open + 1);
    for (;;) {
      // Not for a text JSON.parse accepted; -1 then makes the count disagree, and the strict parser decide.
      if (close === -1) return -1;
      let slashes = 0;
      while (text.charCodeAt(close - 1 - slashes) === 0x5c) slashes++;
      if (slashes % 2 === 0) break;
      close = text.indexOf('"', close + 1);
    }
    let next = close + 1;
    let c = text.charCodeAt(next);
    while (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) c = text.charCodeAt(++next);
    if (c === 0x3a) names++;
    open = text.indexOf('"', next);
  }
  return names;
}

/** The strict parser alone, without trying JSON.parse first (what parseStrictJson must always agree with). */
export function parseStrictly(text: string, limits: JsonLimits = JSON_LIMITS): StrictJsonResult {
  let i = 0;
  const path: (string | number)[] = [];
  const issues: Issue[] = [];
  let found = 0;
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
    if (!problem) return;
    // Every issue is counted; the first MAX_ISSUES are listed.
    if (++found <= MAX_ISSUES) issues.push({ source: { pointer: where }, ...problem });
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
    return found > issues.length
      ? { ok: true, value: v, issues, totalIssues: found }
      : { ok: true, value: v, issues };
  } catch (err) {
    if (err instanceof Refused) return { ok: false, refusal: err.refusal };
    throw err;
  }
}
