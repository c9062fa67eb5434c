import { canonicalUri, linkTypeUri, MalformedLink, parseDigitalLink, redirectTarget } from "./digital-link";

describe("parseDigitalLink", () => {
  it("normalises GTIN-8, -12 and -13 to 14 digits and reads the qualifiers in order", () => {
    expect(parseDigitalLink("/01/96385074")).toEqual({ gtin14: "00000096385074" });
    expect(parseDigitalLink("/01/036000291452/")).toEqual({ gtin14: "00036000291452" });
    expect(parseDigitalLink("/01/4006381333931/22/v1/10/LOT%2F1/21/S-1")).toEqual({
      gtin14: "04006381333931",
      cpv: "v1",
      batch: "LOT/1",
      serial: "S-1",
    });
  });

  it.each([
    ["/01/4006381333932", /check digit/],
    ["/01/123456789", /8, 12, 13 or 14 digits/],
    ["/01/4006381333931/21/a/10/b", /order 22, 10, 21/],
    ["/01/4006381333931/21/a/21/b", /order 22, 10, 21/],
    ["/01/4006381333931/17/260101", /not a qualifier/],
    ["/01/4006381333931/21", /followed by its value/],
    ["/01/4006381333931/21/%E2%82%AC", /character set 82/],
    ["/01/4006381333931/21/%ZZ", /percent-encoding/],
    ["/02/4006381333931", /starts with \/01\//],
  ])("refuses %s", (path, message) => {
    expect(() => parseDigitalLink(path)).toThrow(MalformedLink);
    expect(() => parseDigitalLink(path)).toThrow(message);
  });
});

describe("the rest of the resolver's rules", () => {
  it("writes the canonical URI with encoded values", () => {
    expect(canonicalUri("https://id.example", { gtin14: "04006381333931", serial: "S 1/2" })).toBe(
      "https://id.example/01/04006381333931/21/S%201%2F2",
    );
  });

  it("reads link types as full URIs, CURIEs or bare names", () => {
    for (const v of ["pip", "gs1:pip", "https://gs1.org/voc/pip"])
      expect(linkTypeUri(v)).toBe("https://gs1.org/voc/pip");
  });

  it("passes the request's query on, without linkType", () => {
    const q = new URLSearchParams("linkType=gs1:pip&utm=label");
    expect(redirectTarget("https://p.example/p/pp_1", q)).toBe("https://p.example/p/pp_1?utm=label");
    expect(redirectTarget("https://p.example/p/pp_1", new URLSearchParams())).toBe(
      "https://p.example/p/pp_1",
    );
  });
});
