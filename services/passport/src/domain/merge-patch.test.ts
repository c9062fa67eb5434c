import { applyMergePatch, jsonEqual, type Json } from "./merge-patch";

describe("applyMergePatch (RFC 7386 Appendix A)", () => {
  const vectors: [Json, Json, Json][] = [
    [{ a: "b" }, { a: "c" }, { a: "c" }],
    [{ a: "b" }, { b: "c" }, { a: "b", b: "c" }],
    [{ a: "b" }, { a: null }, {}],
    [{ a: "b", b: "c" }, { a: null }, { b: "c" }],
    [{ a: ["b"] }, { a: "c" }, { a: "c" }],
    [{ a: "c" }, { a: ["b"] }, { a: ["b"] }],
    [{ a: { b: "c" } }, { a: { b: "d", c: null } }, { a: { b: "d" } }],
    [{ a: [{ b: "c" }] }, { a: [1] }, { a: [1] }],
    [
      ["a", "b"],
      ["c", "d"],
      ["c", "d"],
    ],
    [{ a: "b" }, ["c"], ["c"]],
    [{ a: "foo" }, null, null],
    [{ a: "foo" }, "bar", "bar"],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: "b", c: null }, { a: "b" }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  it.each(vectors)("%j + %j = %j", (target, patch, expected) => {
    expect(applyMergePatch(target, patch)).toEqual(expected);
  });

  it("replaces arrays whole and never mutates the target", () => {
    const target = { material_composition: [{ fiber: "cotton", percentage: 100 }], product_name: "A" };
    const copy = JSON.parse(JSON.stringify(target));
    const out = applyMergePatch(target, { material_composition: [{ fiber: "wool", percentage: 100 }] });
    expect(out).toEqual({ material_composition: [{ fiber: "wool", percentage: 100 }], product_name: "A" });
    expect(target).toEqual(copy);
  });

  it("keeps a __proto__ key as data without touching the prototype", () => {
    const out = applyMergePatch({}, JSON.parse('{"__proto__": {"polluted": true}}')) as Record<
      string,
      unknown
    >;
    expect(Object.keys(out)).toEqual(["__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });
});

describe("jsonEqual", () => {
  it("ignores key order and compares arrays in order", () => {
    expect(jsonEqual({ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 })).toBe(true);
    expect(jsonEqual({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: 1, b: null })).toBe(false);
  });
});
