import {
  JSON_LIMITS,
  parseStrictJson,
  parseStrictJsonBytes,
  parseStrictly,
  textProblem,
  type JsonLimits,
} from "./strict-json";

const bytes = (...b: number[]) => Uint8Array.from(b);
const utf8 = (s: string) => new TextEncoder().encode(s);

describe("parseStrictJson", () => {
  it("parses what JSON.parse parses, to the same value", () => {
    const docs = [
      "{}",
      "[]",
      ' { "a" : [1, -2.5e3, 0.25, true, false, null, "x"], "b": {"c": {}} } ',
      '{"esc":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00"}',
      '[{"n": 1E+2}, {"n": -0}]',
      '{"emoji":"😀","cjk":"漢字"}',
    ];
    for (const text of docs) {
      const r = parseStrictJson(text);
      expect(r).toEqual({ ok: true, value: JSON.parse(text), issues: [] });
    }
  });

  it("keeps __proto__ as an own member, as JSON.parse does", () => {
    const r = parseStrictJson('{"__proto__": {"polluted": true}}');
    if (!r.ok) throw new Error("refused");
    const v = r.value as Record<string, unknown>;
    expect(Object.keys(v)).toEqual(["__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
  });

  it("refuses malformed JSON and a top level that is not an object or an array as json_syntax", () => {
    for (const text of [
      "",
      "   ",
      "{bad",
      '{"a": 1,}',
      '{"a" 1}',
      "[1 2]",
      '"just a string"',
      "null",
      "42",
      "{} {}",
      '{"a": "\u0001"}',
      '{"a": "\\x"}',
      '{"a": "\\u12"}',
      '{"a": 01}',
      '{"a": tru}',
      '{"a": "open',
    ]) {
      const r = parseStrictJson(text);
      expect(r).toMatchObject({ ok: false, refusal: { rule: "json_syntax", pointer: "" } });
    }
  });

  it("refuses a member name given twice in one object, wherever it is, with its pointer", () => {
    expect(parseStrictJson('{"category": "textile", "category": "battery"}')).toMatchObject({
      ok: false,
      refusal: { rule: "duplicate_member", pointer: "/category" },
    });
    expect(parseStrictJson('{"data": {"a/b": 1, "x": [{"k": 1, "k": 2}]}}')).toMatchObject({
      ok: false,
      refusal: { rule: "duplicate_member", pointer: "/data/x/0/k" },
    });
    // The same name in two objects is not a duplicate; escapes are compared decoded.
    expect(parseStrictJson('{"a": {"k": 1}, "b": {"k": 1}}').ok).toBe(true);
    expect(parseStrictJson('{"k": 1, "\\u006b": 2}')).toMatchObject({
      ok: false,
      refusal: { rule: "duplicate_member" },
    });
  });

  it("bounds the nesting depth without exhausting the stack, even 10,000 levels deep", () => {
    const ok = "[".repeat(JSON_LIMITS.maxDepth) + "]".repeat(JSON_LIMITS.maxDepth);
    expect(parseStrictJson(ok).ok).toBe(true);
    const over = "[".repeat(JSON_LIMITS.maxDepth + 1) + "]".repeat(JSON_LIMITS.maxDepth + 1);
    expect(parseStrictJson(over)).toMatchObject({ ok: false, refusal: { rule: "max_depth" } });
    const deep = '{"data":' + '{"a":'.repeat(10_000) + "1" + "}".repeat(10_001);
    const r = parseStrictJson(deep);
    expect(r).toMatchObject({ ok: false, refusal: { rule: "max_depth" } });
    if (!r.ok) expect(r.refusal.pointer).toBe("/data" + "/a".repeat(JSON_LIMITS.maxDepth - 1));
  });

  it("bounds the members of an object and the items of an array", () => {
    const members = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(",")}}`;
    expect(parseStrictJson(members(JSON_LIMITS.maxMembers)).ok).toBe(true);
    expect(parseStrictJson(`{"data":${members(JSON_LIMITS.maxMembers + 1)}}`)).toMatchObject({
      ok: false,
      refusal: { rule: "max_members", pointer: "/data" },
    });
    const items = (n: number) => `[${Array.from({ length: n }, () => "0").join(",")}]`;
    expect(parseStrictJson(items(JSON_LIMITS.maxItems)).ok).toBe(true);
    expect(parseStrictJson(`{"v":${items(JSON_LIMITS.maxItems + 1)}}`)).toMatchObject({
      ok: false,
      refusal: { rule: "max_items", pointer: "/v" },
    });
  });

  it("lists every string holding NUL or an unpaired surrogate, values and member names, at its pointer", () => {
    const r = parseStrictJson(
      '{"external_id": "a\\u0000b", "data": {"product_name": "\\ud800", "ok": "\\ud83d\\ude00", "n\\u0000": 1, "list": ["x", "\\udc00y"]}}',
    );
    expect(r).toEqual({
      ok: true,
      value: expect.anything(),
      issues: [
        { source: { pointer: "/external_id" }, rule: "nul_character", message: expect.any(String) },
        { source: { pointer: "/data/product_name" }, rule: "lone_surrogate", message: expect.any(String) },
        { source: { pointer: "/data/n\u0000" }, rule: "nul_character", message: expect.any(String) },
        { source: { pointer: "/data/list/1" }, rule: "lone_surrogate", message: expect.any(String) },
      ],
    });
  });
});

describe("many refused strings", () => {
  it("lists the first 100 and counts them all", () => {
    const members = Array.from({ length: 150 }, (_, i) => `"m${i}": "a\\u0000"`);
    const r = parseStrictJson(`{${members.join(",")}}`);
    if (!r.ok) throw new Error("refused");
    expect(r.issues.map((i) => ("pointer" in i.source ? i.source.pointer : ""))).toEqual(
      Array.from({ length: 100 }, (_, i) => `/m${i}`),
    );
    expect(r.totalIssues).toBe(150);
  });

  it("gives no total when it lists every issue", () => {
    const members = Array.from({ length: 100 }, (_, i) => `"m${i}": "a\\u0000"`);
    const r = parseStrictJson(`{${members.join(",")}}`);
    expect(r.ok && [r.issues.length, r.totalIssues]).toEqual([100, undefined]);
  });
});

describe("parseStrictJsonBytes", () => {
  it("refuses bytes that are not UTF-8 instead of replacing them with U+FFFD", () => {
    for (const b of [
      bytes(0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d), // {"a":"<ff>"}
      bytes(0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x22, 0x7d), // a truncated sequence
      bytes(0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d), // an encoded surrogate (CESU-8)
      bytes(0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc0, 0x80, 0x22, 0x7d), // an overlong NUL
    ])
      expect(parseStrictJsonBytes(b)).toMatchObject({ ok: false, refusal: { rule: "utf8", pointer: "" } });
  });

  it("reads UTF-8, with or without a byte order mark", () => {
    expect(parseStrictJsonBytes(utf8('{"a":"é😀"}'))).toEqual({ ok: true, value: { a: "é😀" }, issues: [] });
    expect(parseStrictJsonBytes(Uint8Array.from([0xef, 0xbb, 0xbf, ...utf8("{}")]))).toEqual({
      ok: true,
      value: {},
      issues: [],
    });
  });
});

describe("textProblem", () => {
  it("names NUL and unpaired surrogates, and accepts paired ones", () => {
    expect(textProblem("abc")).toBeUndefined();
    expect(textProblem("😀")).toBeUndefined();
    expect(textProblem("a\u0000")?.rule).toBe("nul_character");
    expect(textProblem("\ud800")?.rule).toBe("lone_surrogate");
    expect(textProblem("x\udc00")?.rule).toBe("lone_surrogate");
    expect(textProblem("\ude00\ud83d")?.rule).toBe("lone_surrogate");
  });
});

describe("parseStrictJson's JSON.parse first", () => {
  /** The same result as the strict parser alone: value, issues or refusal (rule, pointer and message). */
  const agrees = (text: string, limits: JsonLimits = JSON_LIMITS) => {
    const both = { text, quick: parseStrictJson(text, limits), strict: parseStrictly(text, limits) };
    expect(both.quick).toEqual(both.strict);
    // toEqual does not tell a member from a prototype: the values must also have the same own members in order.
    if (both.quick.ok && both.strict.ok) expect(shape(both.quick.value)).toEqual(shape(both.strict.value));
  };
  const shape = (v: unknown): unknown =>
    v === null || typeof v !== "object"
      ? v
      : Array.isArray(v)
        ? v.map(shape)
        : [
            Object.getPrototypeOf(v) === Object.prototype,
            Object.keys(v).map((k) => [k, shape((v as never)[k])]),
          ];

  it("agrees with the strict parser on documents made to trip a shortcut", () => {
    const deep = (n: number) => "[".repeat(n) + "]".repeat(n);
    // JSON text as written (String.raw: a backslash is a backslash of the text).
    const docs = [
      String.raw`{"a": 1, "a": 1}`,
      String.raw`{"x": {"a": 1}, "y": {"a": 1, "b": {"c": [1, {"d": 2, "d": 3}]}}}`,
      String.raw`{"a\\": 1, "a\\\"": 2, "a\"": 3}`,
      String.raw`{"a\\": 1, "a\\": 2}`,
      String.raw`{"v": "\\", "w": "\\\"", "k": "x\": 1, \"k"}`,
      String.raw`{"k": "x\": 1, \"k", "k": 2}`,
      String.raw`["a", ":b", "c" , : ]`,
      String.raw`["a", ":b"]`,
      String.raw`["a", ":b", {"c": 1}]`,
      String.raw`{"s": "\": \"", "s2": 1}`,
      '{"a"  :  1, "b"\t:\n2, "c"\r\n: 3}',
      String.raw`{"__proto__": 1, "__proto__": 2}`,
      String.raw`{"__proto__": {"a": 1}, "constructor": 2, "toString": 3}`,
      String.raw`{"1": 1, "01": 2, "1.0": 3, "-1": 4, "10": 5, "2": 6}`,
      String.raw`{"nul": "\u0000"}`,
      String.raw`{"k\u0000": 1}`,
      String.raw`{"lone": "\ud800"}`,
      String.raw`{"lone": "\udc00x"}`,
      String.raw`{"pair": "\ud83d\ude00", "raw": "😀"}`,
      String.raw`{"literal": "\\u0000"}`,
      '{"raw lone": "\ud800"}',
      '{"raw nul": "\u0000"}',
      String.raw`{"a": [1, 2, 3], "n": -0, "e": 1e400, "f": 1.5E-3, "big": 12345678901234567890}`,
      deep(32),
      deep(33),
      `{"a": ${deep(31)}}`,
      `{"a": ${deep(32)}}`,
      "",
      "{",
      '"s"',
      "1",
      "{}  ",
      "\ufeff{}",
      '{"a": 1,}',
    ];
    for (const text of docs) agrees(text);
  });

  it("agrees at the bounds of members and items", () => {
    const limits: JsonLimits = { maxDepth: 4, maxMembers: 3, maxItems: 3 };
    for (const text of [
      '{"a": 1, "b": 2, "c": 3}',
      '{"a": 1, "b": 2, "c": 3, "d": 4}',
      '{"a": 1, "b": 2, "a": 3, "c": 4}',
      "[1, 2, 3]",
      "[1, 2, 3, 4]",
      "[[[[]]]]",
      "[[[[[]]]]]",
      '[[[{"a": "x"}]]]',
      '[[[[{"a": 1}]]]]',
    ])
      agrees(text, limits);
  });

  it("agrees on generated documents (duplicate names, escapes, surrogates, nesting)", () => {
    // mulberry32, seeded: the same documents on every run.
    let seed = 20261123;
    const rand = (n: number) => {
      seed = (seed + 0x6d2b79f5) | 0;
      let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
      return ((x ^ (x >>> 14)) >>> 0) % n;
    };
    // Pieces of string content as JSON text: escapes, quotes and colons inside strings, surrogates.
    const pieces = [
      "a",
      String.raw`\\`,
      String.raw`\"`,
      String.raw`\u0000`,
      String.raw`\ud800`,
      String.raw`\udfff`,
      String.raw`\ud83d\ude00`,
      "😀",
      "\ud800",
      ": ",
      String.raw`\":`,
      String.raw`\\\":`,
      "é",
      String.raw`\n`,
      "/",
    ];
    const str = () => `"${Array.from({ length: rand(4) }, () => pieces[rand(pieces.length)]).join("")}"`;
    const names = ['"a"', '"b"', '"c"', String.raw`"\\"`, String.raw`"a\""`, '"__proto__"', '"1"'];
    const name = () => (rand(8) === 0 ? str() : names[rand(names.length)]!);
    const doc = (depth: number): string => {
      const kind = depth > 6 ? rand(4) : rand(7);
      if (kind === 0) return String(rand(1000) - 500);
      if (kind === 1) return str();
      if (kind === 2) return ["true", "false", "null"][rand(3)]!;
      if (kind === 3) return "1.5e3";
      if (kind <= 4) return `[${Array.from({ length: rand(4) }, () => doc(depth + 1)).join(", ")}]`;
      return `{${Array.from({ length: rand(4) }, () => `${name()} : ${doc(depth + 1)}`).join(",")}}`;
    };
    const limits: JsonLimits = { maxDepth: 5, maxMembers: 3, maxItems: 3 };
    let accepted = 0;
    for (let n = 0; n < 3000; n++) {
      const text = rand(2) ? `{"d": ${doc(0)}}` : `[${doc(0)}]`;
      agrees(text, limits);
      agrees(text);
      const r = parseStrictly(text, limits);
      if (r.ok && r.issues.length === 0) accepted++;
    }
    // Enough of them are accepted as they are (the shortcut's answer), and enough are not.
    expect(accepted).toBeGreaterThan(300);
    expect(accepted).toBeLessThan(2700);
  });
});
