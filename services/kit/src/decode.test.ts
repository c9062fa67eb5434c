import { create, fromBinary, ScalarType, toBinary, type DescMessage } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { passportV1, variantsUnitsV1 } from "@dpp/proto";
import { decodedAside, decodeMessage, decodesItself, strictDecoding } from "./decode";
import { encodeMessage, encodesItself } from "./encode";
import { useFastUtf8Encoding } from "./wire";
import { handWritten } from "../test/support/encode-test-schema";
import { allMessages, randomMessage, rng } from "../test/support/proto-samples";

useFastUtf8Encoding();

beforeEach(() => strictDecoding(true));
afterEach(() => strictDecoding(false));

const bytesOf = (schema: DescMessage, init: Record<string, unknown>) =>
  Buffer.from(toBinary(schema, create(schema, init as never)));

/** decodeMessage's message against fromBinary's, from a Buffer (as grpc-js gives) and from a plain Uint8Array. */
function expectSameMessage(schema: DescMessage, bytes: Buffer, label: string): void {
  const plain = new Uint8Array(bytes);
  for (const input of [bytes, plain]) {
    const expected = fromBinary(schema, input);
    const actual = decodeMessage(schema, input);
    try {
      expect(actual).toStrictEqual(expected);
    } catch (err) {
      throw new Error(
        `${schema.typeName} ${label} (${input === bytes ? "Buffer" : "Uint8Array"}): ${String(err)}`,
      );
    }
  }
}

describe("decodeMessage", () => {
  const messages = allMessages();

  it("reads itself every message the encoder writes itself, the services' messages among them", () => {
    expect(messages.filter((m) => decodesItself(m) !== encodesItself(m)).map((m) => m.typeName)).toEqual([]);
    const dpp = messages.filter((m) => m.typeName.startsWith("dpp."));
    expect(dpp.length).toBeGreaterThan(40);
    expect(dpp.filter((m) => !decodesItself(m)).map((m) => m.typeName)).toEqual([]);
    for (const m of Object.values(handWritten))
      expect([m.typeName, decodesItself(m)]).toEqual([m.typeName, true]);
  });

  it("reads the message fromBinary reads, for every message, its zero values, 64-bit, float and unicode fields included", () => {
    let compared = 0;
    const aside = decodedAside();
    for (const schema of messages) {
      const seeds = schema === handWritten.Everything ? 60 : schema.typeName.startsWith("kit.") ? 300 : 40;
      for (let seed = 1; seed <= seeds; seed++) {
        const init = randomMessage(schema, rng(seed * 7919 + schema.typeName.length));
        expectSameMessage(schema, bytesOf(schema, init), `seed ${seed}`);
        compared++;
      }
      expectSameMessage(schema, Buffer.alloc(0), "empty");
    }
    expect(compared).toBeGreaterThan(messages.length * 40);
    // Bytes as the encoders write them are read here, never left to fromBinary.
    expect(decodedAside()).toBe(aside);
  });

  it("reads a list packed or not, as fromBinary does", () => {
    const { Lists } = handWritten;
    const field = Lists.fields.find(
      (f) => f.fieldKind === "list" && f.listKind === "scalar" && f.scalar === ScalarType.INT32,
    )!;
    const w = new BinaryWriter();
    // One int32 list sent twice: once packed, then as separate values; both are read, in that order.
    w.tag(field.number, WireType.LengthDelimited).fork().int32(1).int32(-2).int32(300).join();
    for (const v of [4, 5]) w.tag(field.number, WireType.Varint).int32(v);
    const bytes = Buffer.from(w.finish());
    expectSameMessage(Lists, bytes, "packed and unpacked");
    expect((decodeMessage(Lists, bytes) as Record<string, unknown>)[field.localName]).toEqual([
      1, -2, 300, 4, 5,
    ]);
  });

  it("leaves to fromBinary bytes it does not read as fromBinary does: unknown fields, a message met twice, malformed bytes", () => {
    const schema = passportV1.GetPassportResponseSchema;
    const passport = { id: "pp_1", organizationId: "org_1", dataJson: '{"product_name":"Tee"}' };
    const known = bytesOf(schema, { passport });
    // A field of a newer version of the message: kept in $unknown, as fromBinary keeps it.
    const aside = decodedAside();
    const newer = Buffer.concat([
      known,
      Buffer.from(new BinaryWriter().tag(99, WireType.Varint).int32(7).finish()),
    ]);
    expectSameMessage(schema, newer, "unknown field");
    expect((decodeMessage(schema, newer) as { $unknown?: unknown[] }).$unknown).toHaveLength(1);
    // The passport twice: merged.
    const twice = Buffer.concat([known, bytesOf(schema, { passport: { gtin: "04012345678901" } })]);
    expectSameMessage(schema, twice, "message met twice");
    expect(decodeMessage<{ passport: { id: string; gtin: string } }>(schema, twice).passport).toMatchObject({
      id: "pp_1",
      gtin: "04012345678901",
    });
    // Cut short: fromBinary's own error.
    const cut = known.subarray(0, known.length - 3);
    expect(() => decodeMessage(schema, cut)).toThrow(
      (() => {
        try {
          fromBinary(schema, cut);
        } catch (err) {
          return (err as Error).message;
        }
        throw new Error("fromBinary read bytes cut short");
      })(),
    );
    // Left to fromBinary: the newer and the twice-met bytes from a Buffer and from a Uint8Array (expectSameMessage)
    // and once more each, and the cut bytes: 7 reads, of which at least the five from expectSameMessage and the
    // cut bytes.
    expect(decodedAside() - aside).toBeGreaterThanOrEqual(5);
  });

  it("reads a batch answer of 1000 variants as fromBinary does, and the encoder writes it back to the same bytes", () => {
    const schema = variantsUnitsV1.CreateVariantsResponseSchema;
    const variants = Array.from({ length: 1000 }, (_, i) => ({
      id: `var_${i.toString(36).padStart(24, "0")}`,
      passportId: "pp_01JXYZABCDEFGHJKMNPQRSTVWX",
      gtin: String(4012345000000 + i).padStart(14, "0"),
      size: `S${i}`,
      colour: i % 2 ? "Black" : "Crème",
      createdAt: { seconds: BigInt(1_795_000_000 + i), nanos: 123_000_000 },
    }));
    const bytes = encodeMessage(schema, { variants });
    expectSameMessage(schema, bytes, "1000 variants");
    expect(encodeMessage(schema, decodeMessage(schema, bytes) as object).equals(bytes)).toBe(true);
  });
});
