import {
  create,
  fromBinary,
  toBinary,
  ScalarType,
  type DescField,
  type DescMessage,
} from "@bufbuild/protobuf";
import {
  Edition,
  FeatureSet_FieldPresence,
  StructSchema,
  isWrapperDesc,
  timestampFromDate,
} from "@bufbuild/protobuf/wkt";
import { passportV1 } from "@dpp/proto";
import { encodeMessage, encodesItself, strictEncoding } from "./encode";
import { useFastUtf8Encoding } from "./wire";
import { handWritten, leftToToBinary } from "../test/support/encode-test-schema";
import {
  allMessages,
  DOUBLE,
  FLOAT,
  INT32,
  INT64,
  nestedOf,
  randomMessage,
  rng,
  STRINGS,
  UINT32,
  UINT64,
} from "../test/support/proto-samples";

useFastUtf8Encoding();

/**
 * What the encoder claims to write itself (encode.ts): a message of a proto3 file whose every field, at any
 * depth, protobuf-es holds in the message's own shape. Not a wrapper in a singular field outside a oneof (held
 * as its bare value) nor a google.protobuf.Struct outside google.protobuf.Value (held as a JSON object). Stated
 * here on its own, so that the test checks the encoder's choice instead of repeating it.
 */
function claimed(desc: DescMessage, seen = new Set<DescMessage>()): boolean {
  if (seen.has(desc)) return true;
  seen.add(desc);
  if (desc.file.edition !== Edition.EDITION_PROTO3) return false;
  for (const f of desc.fields) {
    const nested = nestedOf(f);
    if (!nested) continue;
    if (f.fieldKind === "message" && f.oneof === undefined && isWrapperDesc(nested)) return false;
    if (nested.typeName === "google.protobuf.Struct" && desc.typeName !== "google.protobuf.Value")
      return false;
    if (!claimed(nested, seen)) return false;
  }
  return true;
}

let cleanups: (() => void)[] = [];
const afterThisTest = (f: () => void) => cleanups.push(f);
afterEach(() => {
  for (const f of cleanups) f();
  cleanups = [];
});

/** In these tests a value the encoder cannot write throws instead of going to toBinary. */
function strictly() {
  strictEncoding("all");
  afterThisTest(() => strictEncoding(false));
}

const bytesOf = (schema: DescMessage, init: Record<string, unknown>) =>
  Buffer.from(toBinary(schema, create(schema, init as never)));

/** encodeMessage's bytes for a message, for its init shape and for the message read back, against toBinary's. */
function expectSameBytes(schema: DescMessage, init: Record<string, unknown>, label: string): void {
  const expected = bytesOf(schema, init);
  const fromMessage = encodeMessage(schema, create(schema, init as never));
  const fromInit = encodeMessage(schema, init);
  if (!fromMessage.equals(expected) || !fromInit.equals(expected)) {
    throw new Error(
      `${schema.typeName} ${label}: bytes differ from toBinary's\n  toBinary ${expected.toString("hex")}\n` +
        `  message  ${fromMessage.toString("hex")}\n  init     ${fromInit.toString("hex")}`,
    );
  }
  // A decoded message (what a replay answers), written again. Not always the bytes it was read from: a float
  // read back as 0 from a double that rounded to it is a zero, and is no longer written.
  const read = fromBinary(schema, expected);
  if (!encodeMessage(schema, read).equals(Buffer.from(toBinary(schema, read))))
    throw new Error(`${schema.typeName} ${label}: read back, bytes differ from toBinary's`);
}

describe("encodeMessage", () => {
  const messages = allMessages();
  const dppMessages = messages.filter((m) => m.typeName.startsWith("dpp."));

  it("writes itself exactly the messages of the kinds it claims, every one of the services' protos among them", () => {
    expect(dppMessages.length).toBeGreaterThan(40);
    expect(messages.filter((m) => encodesItself(m) !== claimed(m)).map((m) => m.typeName)).toEqual([]);
    for (const m of Object.values(handWritten))
      expect([m.typeName, encodesItself(m)]).toEqual([m.typeName, true]);
    for (const m of Object.values(leftToToBinary))
      expect([m.typeName, encodesItself(m)]).toEqual([m.typeName, false]);
  });

  it("has a test schema holding every kind it claims", () => {
    const { Scalars, Lists, Maps, Choice, Optionals } = handWritten;
    const allScalars = Object.values(ScalarType).filter((t) => typeof t === "number");
    expect(allScalars).toHaveLength(15);
    const scalarsOf = (fields: readonly DescField[]) =>
      new Set(fields.map((f) => (f.fieldKind === "scalar" || f.fieldKind === "list" ? f.scalar : undefined)));
    for (const fields of [Scalars.fields, Optionals.fields, Choice.fields, Lists.fields])
      for (const t of allScalars) expect(scalarsOf(fields).has(t as ScalarType)).toBe(true);
    expect(
      Optionals.fields.filter(
        (f) => f.fieldKind === "scalar" && f.presence === FeatureSet_FieldPresence.EXPLICIT,
      ),
    ).toHaveLength(15);
    expect(Lists.fields.filter((f) => f.fieldKind === "list" && f.packed).length).toBeGreaterThanOrEqual(14);
    expect(
      Lists.fields.filter((f) => f.fieldKind === "list" && f.listKind !== "message" && !f.packed).length,
    ).toBe(7);
    const keys = new Set(Maps.fields.map((f) => (f.fieldKind === "map" ? f.mapKey : undefined)));
    expect(keys.size).toBe(12); // every scalar type but double, float and bytes
    expect(Choice.oneofs[0]!.fields).toHaveLength(18);
  });

  it("writes the bytes toBinary writes, for every message, as a message, as its init shape and read back", () => {
    // A claimed message never goes to toBinary here: a value the encoder cannot write throws.
    strictly();
    let compared = 0;
    for (const schema of messages) {
      // The test schema's messages more often; Everything, which holds all of them and itself, less.
      const seeds = schema === handWritten.Everything ? 60 : schema.typeName.startsWith("kit.") ? 300 : 40;
      for (let seed = 1; seed <= seeds; seed++) {
        expectSameBytes(
          schema,
          randomMessage(schema, rng(seed * 7919 + schema.typeName.length)),
          `seed ${seed}`,
        );
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(messages.length * 40);
  });

  it("writes edge values of every scalar type as toBinary does: NaN, -0, infinities, the extremes, empty and unicode texts", () => {
    strictly();
    const { Scalars, Optionals, Lists, Choice } = handWritten;
    const edges: Record<number, unknown[]> = {
      [ScalarType.DOUBLE]: DOUBLE,
      [ScalarType.FLOAT]: FLOAT,
      [ScalarType.INT32]: INT32,
      [ScalarType.SINT32]: INT32,
      [ScalarType.SFIXED32]: INT32,
      [ScalarType.UINT32]: UINT32,
      [ScalarType.FIXED32]: UINT32,
      [ScalarType.INT64]: INT64,
      [ScalarType.SINT64]: INT64,
      [ScalarType.SFIXED64]: INT64,
      [ScalarType.UINT64]: UINT64,
      [ScalarType.FIXED64]: UINT64,
      [ScalarType.BOOL]: [false, true],
      [ScalarType.STRING]: STRINGS,
      [ScalarType.BYTES]: [new Uint8Array(0), new Uint8Array([0]), new Uint8Array(300).fill(255)],
    };
    let compared = 0;
    for (const f of Scalars.fields) {
      if (f.fieldKind !== "scalar") continue;
      for (const v of edges[f.scalar]!) {
        const value = f.longAsString ? String(v) : v;
        expectSameBytes(Scalars, { [f.localName]: value }, `${f.name} = ${String(value)}`);
        expectSameBytes(Choice, { kind: { case: f.localName, value } }, `oneof ${f.name} = ${String(value)}`);
        const optional = Optionals.fields.find((o) => o.name === f.name);
        if (optional) expectSameBytes(Optionals, { [optional.localName]: value }, `optional ${f.name}`);
        compared += 3;
      }
      const list = Lists.fields.find((l) => l.name === f.name);
      if (list) {
        expectSameBytes(Lists, { [list.localName]: edges[f.scalar]! }, `list ${f.name}`);
        expectSameBytes(Lists, { [list.localName]: [] }, `empty list ${f.name}`);
      }
    }
    // The same values in unpacked lists, enum values of every size, and in map keys and values.
    expectSameBytes(
      Lists,
      { int32Unpacked: INT32, doubleUnpacked: DOUBLE, sint64Unpacked: INT64 },
      "unpacked",
    );
    expectSameBytes(
      Lists,
      { fixed32Unpacked: UINT32, colorUnpacked: [0, 1, -3, 2 ** 31 - 1, 99] },
      "unpacked",
    );
    expectSameBytes(Lists, { color: [0, 1, -3, 2 ** 31 - 1, 99, -(2 ** 31)] }, "packed enums");
    expectSameBytes(Scalars, { color: -3 }, "a negative enum value");
    expectSameBytes(
      handWritten.Maps,
      {
        int32Double: Object.fromEntries(INT32.map((k, i) => [String(k), DOUBLE[i % DOUBLE.length]])),
        sint32Float: Object.fromEntries(INT32.map((k, i) => [String(k), FLOAT[i % FLOAT.length]])),
        sfixed64Uint64: Object.fromEntries(
          INT64.map((k, i) => [String(BigInt(k)), UINT64[i % UINT64.length]]),
        ),
        fixed64String: Object.fromEntries(
          UINT64.map((k, i) => [String(BigInt(k)), STRINGS[i % STRINGS.length]]),
        ),
        boolFixed64: { true: 2n ** 64n - 1n, false: 0n },
        stringString: Object.fromEntries(STRINGS.map((s) => [s, s])),
        stringScalars: { "": {}, "👕": { double: NaN, float: -0, string: "" } },
      },
      "map edges",
    );
    expect(compared).toBeGreaterThan(400);
  });

  it("leaves to toBinary, with its bytes, a map key spelled as protobuf-es would not spell it", () => {
    const { Maps } = handWritten;
    for (const [field, key] of [
      ["int32Double", "007"],
      ["int32Double", "-0"],
      ["int32Double", "1e3"],
      ["uint32Color", " 5"],
      ["int64Scalars", "0x10"],
      ["uint64Bytes", "+1"],
    ] as const) {
      const init = {
        [field]: { [key]: field === "int64Scalars" ? {} : field === "uint64Bytes" ? new Uint8Array(1) : 1 },
      };
      const expected = bytesOf(Maps, init);
      expect(encodeMessage(Maps, init).equals(expected)).toBe(true);
    }
  });

  it("leaves a oneof member chosen without a value to toBinary, which writes its zero", () => {
    const { Choice } = handWritten;
    for (const member of ["string", "int64", "double", "bool"]) {
      const init = { kind: { case: member, value: undefined } };
      expect(encodeMessage(Choice, init).equals(bytesOf(Choice, init))).toBe(true);
    }
  });

  it("writes a passport answer as toBinary does, zero values left out", () => {
    const at = new Date("2026-11-27T10:00:00.123Z");
    const answer = {
      passport: {
        id: "pp_01JXYZABCDEFGHJKMNPQRSTVWX",
        organizationId: "org_1",
        category: "textile",
        status: passportV1.PassportStatus.DRAFT,
        version: 0,
        livemode: false,
        createdAt: timestampFromDate(at),
        updatedAt: timestampFromDate(at),
        publishedAt: undefined,
        dataJson: "{}",
      },
    };
    const bytes = encodeMessage(passportV1.GetPassportResponseSchema, answer);
    expect(bytes.equals(bytesOf(passportV1.GetPassportResponseSchema, answer))).toBe(true);
    const back = fromBinary(passportV1.GetPassportResponseSchema, bytes);
    expect(back.passport?.id).toBe("pp_01JXYZABCDEFGHJKMNPQRSTVWX");
    expect(back.passport?.createdAt?.nanos).toBe(123_000_000);
  });

  it("writes text as UTF-8, short or long: the receiver reads accents, scripts and emoji back unchanged", () => {
    const schema = passportV1.CreatePassportRequestSchema;
    for (const text of [
      "é",
      "Crème",
      "日本語",
      "👕",
      "a👕b",
      "ñ".repeat(47),
      "ü".repeat(60),
      "x".repeat(47) + "é",
    ]) {
      const request = { category: text, externalId: text, dataJson: JSON.stringify({ product_name: text }) };
      const bytes = encodeMessage(schema, request);
      expect(bytes.equals(bytesOf(schema, request))).toBe(true);
      const read = fromBinary(schema, bytes);
      expect([read.category, read.externalId, JSON.parse(read.dataJson).product_name]).toEqual([
        text,
        text,
        text,
      ]);
    }
  });

  it("writes an optional field that is set to its zero value: Expected-Version 0 and an empty external_id arrive set", () => {
    const update = passportV1.UpdatePassportRequestSchema;
    const withZero = { id: "pp_1", patchJson: "{}", expectedVersion: 0 };
    const read = fromBinary(update, encodeMessage(update, withZero));
    expect(read.expectedVersion).toBe(0);
    expect(
      fromBinary(update, encodeMessage(update, { id: "pp_1", patchJson: "{}" })).expectedVersion,
    ).toBeUndefined();
    const create = passportV1.CreatePassportRequestSchema;
    const empty = { category: "textile", externalId: "", dataJson: "" };
    expect(encodeMessage(create, empty).equals(bytesOf(create, empty))).toBe(true);
    expect(fromBinary(create, encodeMessage(create, empty)).externalId).toBe("");
  });

  it("keeps the unknown fields of a message read from newer bytes, last, as toBinary does", () => {
    strictly();
    const schema = passportV1.GetPassportRequestSchema;
    // field 999 (varint 5) is unknown to the request message
    const newer = Buffer.concat([bytesOf(schema, { id: "pp_1" }), Buffer.from([0xb8, 0x3e, 0x05])]);
    const read = fromBinary(schema, newer);
    expect(encodeMessage(schema, read).equals(Buffer.from(toBinary(schema, read)))).toBe(true);
    expect(encodeMessage(schema, read).equals(newer)).toBe(true);
  });

  it("leaves a schema with fields protobuf-es holds in another shape, or of another syntax, to toBinary, with the same bytes", () => {
    const { Fallback, Legacy } = leftToToBinary;
    const fallback = { wrapped: 5, struct: { a: 1.5, b: [true, null, "x"] }, scalars: { double: NaN } };
    expect(encodeMessage(Fallback, fallback).equals(bytesOf(Fallback, fallback))).toBe(true);
    const legacy = { id: "x", closed: 2, item: { name: "é" } };
    expect(encodeMessage(Legacy, legacy).equals(bytesOf(Legacy, legacy))).toBe(true);
    // google.protobuf.Struct itself is a message like any other: its fields hold Values.
    expect(encodesItself(StructSchema)).toBe(true);
    const struct = { fields: { a: { kind: { case: "numberValue", value: 1.5 } } } };
    expect(encodeMessage(StructSchema, struct).equals(bytesOf(StructSchema, struct))).toBe(true);
  });

  it("refuses a value that does not fit its field with protobuf-es' own error", () => {
    const schema = passportV1.GetPassportResponseSchema;
    const bad = { passport: { id: "pp_1", version: 1.5 } };
    expect(() => encodeMessage(schema, bad)).toThrow(
      /cannot encode field dpp\.passport\.v1\.Passport\.version/,
    );
    const { Scalars } = handWritten;
    expect(() => encodeMessage(Scalars, { float: 1e39 })).toThrow(/invalid float32: 1e\+39/);
    expect(() => encodeMessage(Scalars, { uint64: -1n })).toThrow(/invalid uint64: -1/);
    expect(() => encodeMessage(Scalars, { sfixed32: 2 ** 31 })).toThrow(/invalid int32: 2147483648/);
  });
});
