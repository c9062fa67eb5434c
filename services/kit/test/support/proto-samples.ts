/**
 * Samples of the services' messages for the binary form's tests (src/encode.test.ts, src/decode.test.ts): every
 * message schema there is, and random messages of each from a seeded generator, edge values of every scalar type
 * first.
 */
import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence, isWrapperDesc } from "@bufbuild/protobuf/wkt";
import * as proto from "@dpp/proto";
import { encodeTestRegistry } from "./encode-test-schema";

export const nestedOf = (f: DescField): DescMessage | undefined =>
  f.fieldKind === "message" ||
  (f.fieldKind === "list" && f.listKind === "message") ||
  (f.fieldKind === "map" && f.mapKind === "message")
    ? f.message
    : undefined;

/**
 * Every message schema @dpp/proto exports, the messages they hold and the services' inputs and outputs, and
 * every message of the encoder's test schema (test/support/encode-test-schema.ts).
 */
export function allMessages(): DescMessage[] {
  const found = new Map<string, DescMessage>();
  const visit = (m: DescMessage) => {
    if (found.has(m.typeName)) return;
    found.set(m.typeName, m);
    for (const f of m.fields) {
      const nested = nestedOf(f);
      if (nested) visit(nested);
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
  for (const t of encodeTestRegistry) if (t.kind === "message") visit(t);
  return [...found.values()];
}

/** A small deterministic generator, so that a failure names a seed that reproduces it. */
export function rng(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 0x100000000;
  };
}

export const STRINGS = [
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

/** Values of each scalar type, edge values first; 64-bit ones as bigints, numbers and decimal texts. */
export const INT32 = [0, -0, 1, -1, 127, 128, 300, 16383, 16384, 2 ** 31 - 1, -(2 ** 31)];
export const UINT32 = [0, -0, 1, 127, 128, 16384, 2 ** 31, 2 ** 32 - 1];
export const INT64 = [
  0n,
  1n,
  -1n,
  127n,
  128n,
  1_764_000_000n,
  2n ** 53n + 1n,
  2n ** 63n - 1n,
  -(2n ** 63n),
  0,
  -0,
  300,
  -1,
  2 ** 40,
  -(2 ** 40),
  2 ** 52,
  -(2 ** 52),
  Number.MAX_SAFE_INTEGER,
  -Number.MAX_SAFE_INTEGER,
  "0",
  "-0",
  "00",
  "-5",
  "9223372036854775807",
  "-9223372036854775808",
];
export const UINT64 = [
  0n,
  1n,
  127n,
  128n,
  2n ** 53n + 1n,
  2n ** 63n,
  2n ** 64n - 1n,
  0,
  300,
  2 ** 52,
  Number.MAX_SAFE_INTEGER,
  "0",
  "18446744073709551615",
];
export const DOUBLE = [
  0,
  -0,
  NaN,
  Infinity,
  -Infinity,
  1.5,
  -2.25,
  0.1,
  2 ** 53,
  Number.MAX_VALUE,
  -Number.MAX_VALUE,
  Number.MIN_VALUE,
  -Number.EPSILON,
];
export const FLOAT = [
  0,
  -0,
  NaN,
  Infinity,
  -Infinity,
  1.5,
  -2.25,
  0.1,
  3.4028234663852886e38,
  -3.4028234663852886e38,
  1.401298464324817e-45,
  1e-46,
  16777217,
];

export function scalarValue(t: ScalarType, longAsString: boolean, r: () => number): unknown {
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
  const text = (v: unknown) => (longAsString ? String(v) : v);
  switch (t) {
    case ScalarType.STRING:
      return pick(STRINGS);
    case ScalarType.BYTES:
      return Uint8Array.from({ length: pick([0, 1, 5, 200]) }, () => Math.floor(r() * 256));
    case ScalarType.BOOL:
      return r() < 0.5;
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return r() < 0.8 ? pick(INT32) : Math.floor(r() * 2 ** 32) - 2 ** 31;
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return r() < 0.8 ? pick(UINT32) : Math.floor(r() * 2 ** 32);
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return text(pick(INT64));
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return text(pick(UINT64));
    case ScalarType.DOUBLE:
      return r() < 0.8 ? pick(DOUBLE) : (r() - 0.5) * 10 ** Math.floor(r() * 40 - 20);
    case ScalarType.FLOAT:
      return r() < 0.8 ? pick(FLOAT) : (r() - 0.5) * 10 ** Math.floor(r() * 20 - 10);
  }
}

/** A map key as an object's property name: what protobuf-es writes for a key of that type. */
export function mapKey(t: ScalarType, r: () => number, i: number): string {
  if (t === ScalarType.STRING) return `${STRINGS[Math.floor(r() * STRINGS.length)]}${i}`;
  if (t === ScalarType.BOOL) return String(r() < 0.5);
  const v = scalarValue(t, false, r);
  return String(typeof v === "string" ? BigInt(v) : v);
}

/** A JSON object, as protobuf-es holds a google.protobuf.Struct in a field. */
export function jsonObject(r: () => number, depth: number): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (let i = 0; i < Math.floor(r() * 3); i++) {
    const k = `${STRINGS[Math.floor(r() * STRINGS.length)]}${i}`;
    const x = r();
    o[k] =
      x < 0.2
        ? null
        : x < 0.4
          ? r() * 100
          : x < 0.6
            ? STRINGS[i]!
            : x < 0.8 || depth > 2
              ? true
              : jsonObject(r, depth + 1);
  }
  return o;
}

export function enumValue(f: DescField & { fieldKind: "enum" | "list" | "map" }, r: () => number): number {
  const e = f.enum!;
  // An open enum (proto3) holds any int32, known or not.
  if (e.open && r() < 0.2) return [12345, -7, 2 ** 31 - 1, -(2 ** 31)][Math.floor(r() * 4)]!;
  return e.values[Math.floor(r() * e.values.length)]!.number;
}

export function randomValue(f: DescField, r: () => number, depth: number): unknown {
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
  // Lists and maps of messages are shorter, the deeper the shorter: the test schema's messages hold themselves.
  const messages = f.fieldKind !== "scalar" && f.fieldKind !== "enum" && nestedOf(f) !== undefined;
  const count = () => pick(!messages ? [0, 1, 3, 7] : depth > 0 ? [0, 1] : [0, 1, 3]);
  switch (f.fieldKind) {
    case "scalar":
      return scalarValue(f.scalar, f.longAsString, r);
    case "enum":
      return enumValue(f, r);
    case "message":
      if (f.oneof === undefined && isWrapperDesc(f.message))
        return randomValue(f.message.fields[0]!, r, depth + 1);
      if (f.message.typeName === "google.protobuf.Struct" && f.parent.typeName !== "google.protobuf.Value")
        return jsonObject(r, 0);
      return randomMessage(f.message, r, depth + 1);
    case "list":
      return Array.from({ length: count() }, () =>
        f.listKind === "message"
          ? randomMessage(f.message, r, depth + 1)
          : f.listKind === "enum"
            ? enumValue(f, r)
            : scalarValue(f.scalar, f.longAsString, r),
      );
    case "map": {
      const m: Record<string, unknown> = {};
      for (let i = 0, n = count(); i < n; i++)
        m[mapKey(f.mapKey, r, i)] =
          f.mapKind === "message"
            ? randomMessage(f.message, r, depth + 1)
            : f.mapKind === "enum"
              ? enumValue(f, r)
              : scalarValue(f.scalar, false, r);
      return m;
    }
  }
}

export function randomMessage(desc: DescMessage, r: () => number, depth = 0): Record<string, unknown> {
  const init: Record<string, unknown> = {};
  for (const f of desc.fields) {
    const required = f.presence === FeatureSet_FieldPresence.LEGACY_REQUIRED;
    if (!required && (depth > 3 || r() < 0.3)) continue;
    const v = randomValue(f, r, depth);
    if (f.oneof) init[f.oneof.localName] = { case: f.localName, value: v };
    else init[f.localName] = v;
  }
  return init;
}
