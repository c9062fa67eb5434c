import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { configureTextEncoding, getTextEncoding } from "@bufbuild/protobuf/wire";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { passportV1 } from "@dpp/proto";
import { useFastUtf8Encoding } from "./wire";

const STRINGS = [
  "",
  "pp_01JXYZABCDEFGHJKMNPQRSTVWX",
  "Crème brûlée — 100 % coton",
  "日本語のテキスト",
  "emoji 👕🔋",
  "lone high \ud800 and low \udc00 surrogates",
  "\u0000 control \u0007 chars",
  "x".repeat(70_000) + "é",
];

describe("useFastUtf8Encoding", () => {
  const defaults = getTextEncoding();
  afterAll(() => configureTextEncoding(defaults));

  it("encodes every string to the bytes TextEncoder gives, and keeps decoding as it was", () => {
    useFastUtf8Encoding();
    const fast = getTextEncoding();
    expect(fast).not.toBe(defaults);
    const te = new TextEncoder();
    for (const s of STRINGS) {
      const bytes = fast.encodeUtf8(s);
      expect(Buffer.from(bytes).equals(Buffer.from(te.encode(s)))).toBe(true);
      expect(fast.decodeUtf8(bytes)).toBe(defaults.decodeUtf8(bytes));
      expect(fast.checkUtf8(s)).toBe(defaults.checkUtf8(s));
    }
    expect(() => fast.decodeUtf8(Uint8Array.of(0xc3), true)).toThrow();
    useFastUtf8Encoding();
    expect(getTextEncoding()).toBe(fast);
  });

  it("leaves a message's binary form unchanged", () => {
    const message = (s: string) =>
      create(passportV1.GetPassportResponseSchema, {
        passport: {
          id: s,
          organizationId: "org_1",
          category: "textile",
          externalId: s,
          version: 3,
          livemode: true,
          createdAt: timestampFromDate(new Date("2026-01-02T03:04:05.678Z")),
          dataJson: JSON.stringify({ name: s }),
        },
      });
    configureTextEncoding(defaults);
    const before = STRINGS.map((s) => toBinary(passportV1.GetPassportResponseSchema, message(s)));
    useFastUtf8Encoding();
    STRINGS.forEach((s, i) => {
      const after = toBinary(passportV1.GetPassportResponseSchema, message(s));
      expect(Buffer.from(after).equals(Buffer.from(before[i]!))).toBe(true);
      expect(fromBinary(passportV1.GetPassportResponseSchema, after).passport?.externalId).toBe(
        s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd"),
      );
    });
  });
});
