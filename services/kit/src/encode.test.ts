import { create, fromBinary, toBinary, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { StructSchema, timestampFromDate } from "@bufbuild/protobuf/wkt";
import * as proto from "@dpp/proto";
import { passportV1 } from "@dpp/proto";
import { encodeMessage, encodesItself, strictEncoding } from "./encode";
import { useFastUtf8Encoding } from "./wire";

useFastUtf8Encoding();

/** Every message schema @dpp/proto exports, the messages they hold and the services' inputs and outputs. */
function allMessages(): DescMessage[] {
  const found = new Map<string, DescMessage>();
  const visit = (m: DescMessage) => {
    if (found.has(m.typeName)) return;
    found.set(m.typeName, m);
    for (const f of m.fields) {
      if (f.fieldKind === "message" || (f.fieldKind === "list" && f.listKind === "message")) visit(f.message);
    }
    for (const n of m.nestedMessages) visit(n);
  };
  const walk = (o: unknown, depth: number) => {
    if (typeof o !== "object" || o === null || depth > 3) return;
    for (const v of Object.values(o)) {
      if (typeof v !== "object" || v === null) continue;
      const kind = (v as { kind?: string }).kind;
      if (kind === "message") visit(v as DescMessage);
      else if (kind === "service") {
        for (const m of (v as { methods: { input: DescMessage; output: DescMessage }[] }).methods) {
          visit(m.input);
          visit(m.output);
        }
      } else if (kind === undefined) walk(v, depth + 1);
    }
  };
  walk(proto, 0);
  return [...found.values()];
}

/** A small deterministic generator, so that a failure names a seed that reproduces it. */
function rng(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 0x100000000;
  };
}

const STRINGS = [
  "",
  "pp_01JXYZABCDEFGHJKMNPQRSTVWX",
  "Crème brûlée — 100 % coton",
  "日本語のテキスト",
  "emoji 👕🔋",
  "lone high \ud800 and low \udc00 surrogates, and one at the end \ud83d",
  "\u0000 control \u0007 chars",
  JSON.stringify({
    product_name: "Bench T-shirt 1",
    material_composition: [{ fiber: "cotton", percentage: 100 }],
  }),
  "x".repeat(300) + "é",
];

function randomValue(f: DescField, r: () => number, depth: number): unknown {
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
  const scalar = (t: number): unknown => {
    switch (t) {
      case 9:
        return pick(STRINGS);
      case 12:
        return Uint8Array.from({ length: pick([0, 1, 5, 200]) }, () => Math.floor(r() * 256));
      case 8:
        return r() < 0.5;
      case 5:
        return pick([0, 1, 127, 128, 300, 2 ** 31 - 1, -1, -(2 ** 31), Math.floor(r() * 1e6)]);
      case 13:
        return pick([0, 1, 128, 2 ** 32 - 1]);
      case 3:
        // as a bigint, or as a number (an init shape may hold one)
        return pick([
          0n,
          1n,
          127n,
          128n,
          1_764_000_000n,
          2n ** 53n + 1n,
          2n ** 63n - 1n,
          -1n,
          -(2n ** 63n),
          0,
          300,
          2 ** 40,
          -1,
          -(2 ** 40),
        ]);
      default:
        throw new Error(`no generator for scalar ${t}`);
    }
  };
  switch (f.fieldKind) {
    case "scalar":
      return scalar(f.scalar);
    case "enum":
      return pick(f.enum.values).number;
    case "message":
      return randomMessage(f.message, r, depth + 1);
    case "list":
      return Array.from({ length: pick([0, 1, 3]) }, () =>
        f.listKind === "message" ? randomMessage(f.message, r, depth + 1) : scalar(f.scalar as number),
      );
    case "map": {
      const m: Record<string, unknown> = {};
      for (let i = 0; i < pick([0, 1, 3]); i++) m[pick(STRINGS) + i] = scalar(f.scalar as number);
      return m;
    }
  }
}

function randomMessage(desc: DescMessage, r: () => number, depth = 0): Record<string, unknown> {
  const init: Record<string, unknown> = {};
  for (const f of desc.fields) {
    if (depth > 4 || r() < 0.3) continue;
    const v = randomValue(f, r, depth);
    if (f.oneof) init[f.oneof.localName] = { case: f.localName, value: v };
    else init[f.localName] = v;
  }
  return init;
}

let cleanups: (() => void)[] = [];
const afterThisTest = (f: () => void) => cleanups.push(f);
afterEach(() => {
  for (const f of cleanups) f();
  cleanups = [];
});

const bytesOf = (schema: DescMessage, init: Record<string, unknown>) =>
  Buffer.from(toBinary(schema, create(schema, init as never)));

describe("encodeMessage", () => {
  const messages = allMessages();

  it("writes every message of the services' protos itself", () => {
    expect(messages.length).toBeGreaterThan(40);
    expect(messages.filter((m) => !encodesItself(m)).map((m) => m.typeName)).toEqual([]);
  });

  it("writes the bytes toBinary writes, for messages and for their init shapes", () => {
    // Every message here is written by the encoder itself: no fallback may hide a fault.
    strictEncoding("all");
    afterThisTest(() => strictEncoding(false));
    let compared = 0;
    for (const schema of messages) {
      for (let seed = 1; seed <= 40; seed++) {
        const init = randomMessage(schema, rng(seed * 7919 + schema.typeName.length));
        const expected = bytesOf(schema, init);
        const message = create(schema, init as never);
        const fromMessage = encodeMessage(schema, message);
        const fromInit = encodeMessage(schema, init);
        if (!fromMessage.equals(expected) || !fromInit.equals(expected)) {
          throw new Error(`${schema.typeName} seed ${seed}: bytes differ from toBinary's`);
        }
        // A decoded message (what a replay answers) is written again as it was read.
        expect(encodeMessage(schema, fromBinary(schema, expected)).equals(expected)).toBe(true);
        compared++;
      }
    }
    expect(compared).toBe(messages.length * 40);
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
    strictEncoding("all");
    afterThisTest(() => strictEncoding(false));
    const schema = passportV1.GetPassportRequestSchema;
    // field 999 (varint 5) is unknown to the request message
    const newer = Buffer.concat([bytesOf(schema, { id: "pp_1" }), Buffer.from([0xb8, 0x3e, 0x05])]);
    const read = fromBinary(schema, newer);
    expect(encodeMessage(schema, read).equals(Buffer.from(toBinary(schema, read)))).toBe(true);
    expect(encodeMessage(schema, read).equals(newer)).toBe(true);
  });

  it("leaves a schema with kinds it does not write to toBinary, with the same bytes", () => {
    expect(encodesItself(StructSchema)).toBe(false);
    const init = { fields: { a: { kind: { case: "numberValue", value: 1.5 } } } };
    expect(encodeMessage(StructSchema, init).equals(bytesOf(StructSchema, init))).toBe(true);
  });

  it("refuses a value that does not fit its field with protobuf-es' own error", () => {
    const schema = passportV1.GetPassportResponseSchema;
    const bad = { passport: { id: "pp_1", version: 1.5 } };
    expect(() => encodeMessage(schema, bad)).toThrow(
      /cannot encode field dpp\.passport\.v1\.Passport\.version/,
    );
  });
});
