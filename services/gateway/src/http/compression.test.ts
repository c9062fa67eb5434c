import zlib from "node:zlib";
import { acceptedEncodings, compressAnswer, COMPRESS_MIN_BYTES, PublicDocument } from "./compression";

describe("acceptedEncodings", () => {
  it.each([
    [undefined, []],
    ["", []],
    ["identity", []],
    ["deflate", []],
    ["gzip, deflate", ["gzip"]],
    ["gzip, deflate, br", ["br", "gzip"]],
    ["GZIP, Br", ["br", "gzip"]],
    ["x-gzip", ["gzip"]],
    ["gzip;q=1.0, br;q=0.5", ["gzip", "br"]],
    ["br;q=0, gzip", ["gzip"]],
    ["br; q=0.000", []],
    ["*", ["br", "gzip"]],
    ["*;q=0, gzip;q=0.2", ["gzip"]],
    ["gzip;q=0.5, *;q=0.8", ["br", "gzip"]],
    // A malformed q-value refuses nothing more and accepts nothing.
    ["br;q=high, gzip;q=2", []],
  ])("%j accepts %j, best first", (header, expected) => {
    expect(acceptedEncodings(header)).toEqual(expected);
  });
});

describe("compressAnswer", () => {
  const big = JSON.stringify({
    object: "list",
    data: Array.from({ length: 100 }, (_, i) => ({ id: `pp_${i}` })),
  });

  it("compresses an answer of at least COMPRESS_MIN_BYTES for a client that accepts it, to the same bytes once decoded", () => {
    expect(Buffer.byteLength(big)).toBeGreaterThanOrEqual(COMPRESS_MIN_BYTES);
    const br = compressAnswer(big, Buffer.byteLength(big), "gzip, br")!;
    expect(br.encoding).toBe("br");
    expect(br.bytes.length).toBeLessThan(Buffer.byteLength(big) / 2);
    expect(zlib.brotliDecompressSync(br.bytes).toString("utf8")).toBe(big);
    const bytes = Buffer.from(big);
    const gzip = compressAnswer(bytes, bytes.length, "gzip")!;
    expect(gzip.encoding).toBe("gzip");
    expect(zlib.gunzipSync(gzip.bytes).toString("utf8")).toBe(big);
  });

  it("sends a smaller answer, or one to a client that accepts no encoding, as it is", () => {
    const small = big.slice(0, COMPRESS_MIN_BYTES - 1);
    expect(compressAnswer(small, COMPRESS_MIN_BYTES - 1, "br, gzip")).toBeUndefined();
    expect(compressAnswer(big, Buffer.byteLength(big), undefined)).toBeUndefined();
    expect(compressAnswer(big, Buffer.byteLength(big), "identity, deflate")).toBeUndefined();
  });
});

describe("PublicDocument", () => {
  const text = `<p>${"A page the same for everyone. ".repeat(500)}</p>`;

  it("keeps each variant once made, with an ETag of its own, and answers as is to a client that accepts none", async () => {
    const doc = new PublicDocument("text/html; charset=utf-8", text, '"abc"');
    const plain = doc.variant(undefined);
    expect(plain).toEqual({ encoding: undefined, body: Buffer.from(text), etag: '"abc"' });
    const gzip = await doc.variant("gzip");
    expect(gzip.encoding).toBe("gzip");
    expect(gzip.etag).toBe('"abc-gzip"');
    expect(zlib.gunzipSync(gzip.body).toString("utf8")).toBe(text);
    // Made once: the next request gets the same bytes at once.
    expect(doc.variant("gzip")).toBe(gzip);
    expect(doc.etags("br, gzip")).toEqual(['"abc-br"', '"abc-gzip"', '"abc"']);
  });

  it("prefers brotli once it is made; until then a client that also accepts gzip gets gzip", async () => {
    const doc = new PublicDocument("text/html; charset=utf-8", text, '"abc"');
    const first = await doc.variant("gzip, br");
    expect(first.encoding).toBe("gzip");
    const br = await doc.compressed("br");
    expect(doc.variant("gzip, br")).toBe(br);
    expect(br.etag).toBe('"abc-br"');
    expect(zlib.brotliDecompressSync(br.body).toString("utf8")).toBe(text);
    // A client that accepts only brotli waits for it.
    const only = new PublicDocument("text/html; charset=utf-8", text, '"def"');
    expect((await only.variant("br")).encoding).toBe("br");
  });
});
