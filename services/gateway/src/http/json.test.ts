import { RawJson, RawJsonBytes, jsonBody, jsonText, rawList, rawListBytes, withRawField } from "./json";

describe("raw JSON in answers", () => {
  it("appends a raw field to an object, parsed back to the same value", () => {
    const raw = '{"b":[1,2,{"c":"é\\u0022"}],"a":null}';
    const out = withRawField({ object: "passport", id: "p_1" }, "data", raw);
    expect(JSON.parse(out.text)).toEqual({ object: "passport", id: "p_1", data: JSON.parse(raw) });
  });

  it("appends a raw field to an empty object", () => {
    expect(JSON.parse(withRawField({}, "related", "[1]").text)).toEqual({ related: [1] });
  });

  it("wraps raw items in the list envelope", () => {
    const page = rawList([new RawJson('{"id":1}'), new RawJson('{"id":2}')], true, "c_2");
    expect(JSON.parse(page.text)).toEqual({
      object: "list",
      data: [{ id: 1 }, { id: 2 }],
      has_more: true,
      next_cursor: "c_2",
    });
    expect(JSON.parse(rawList([], false, null).text)).toEqual({
      object: "list",
      data: [],
      has_more: false,
      next_cursor: null,
    });
  });

  it("wraps the bytes of a JSON array in the list envelope, byte for byte", () => {
    const data = Buffer.from('[{"id":"é"},{"id":"\u2028"}]', "utf8");
    const page = rawListBytes(data.subarray(0), true, "c_2");
    expect(Buffer.from(page.bytes).toString("utf8")).toBe(
      `{"object":"list","data":${data.toString("utf8")},"has_more":true,"next_cursor":"c_2"}`,
    );
    expect(JSON.parse(jsonText(rawListBytes(Buffer.from("[]"), false, null)))).toEqual({
      object: "list",
      data: [],
      has_more: false,
      next_cursor: null,
    });
  });

  it("sends a RawJson as its text and anything else through JSON.stringify", () => {
    expect(jsonText(new RawJson('{"x":1}'))).toBe('{"x":1}');
    expect(jsonText({ x: [1, "y"] })).toBe('{"x":[1,"y"]}');
    expect(jsonBody({ x: 1 })).toBe('{"x":1}');
  });

  it("sends a RawJsonBytes as its bytes, not as a string", () => {
    const bytes = new Uint8Array(Buffer.from('{"x":"é"}', "utf8"));
    expect(jsonBody(new RawJsonBytes(bytes))).toBe(bytes);
    expect(jsonText(new RawJsonBytes(bytes))).toBe('{"x":"é"}');
  });
});
