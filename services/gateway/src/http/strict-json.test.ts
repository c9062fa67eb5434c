import { JSON_LIMITS, parseStrictJson, parseStrictJsonBytes, textProblem } from "./strict-json";

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
