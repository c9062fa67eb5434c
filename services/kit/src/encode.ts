/**
 * The binary form of the services' messages, written in two passes into one buffer: sizes first, then bytes.
 *
 * protobuf-es' `toBinary` walks a message through its reflection API and a writer that forks a chunk list per
 * nested message and joins them at the end: about 10 µs for a passport answer of 215 bytes on the benchmark
 * machine, the largest single cost of a GET in the passport service after the sockets. The same bytes cost
 * about 1 µs this way. Every answer and request of the gRPC adapter (grpc.ts) and every keyed answer recorded
 * (idempotency.ts) goes through `encodeMessage`.
 *
 * It writes exactly what `toBinary` writes (fields by number, each as protobuf-es decides it is set, unknown
 * fields last) for every field of a proto3 file: the fifteen scalar types, enums, messages, proto3 `optional`,
 * oneofs, repeated fields (scalars and enums packed unless `[packed = false]`) and maps of any key and value.
 * Written by `toBinary` instead, whole: a message of a proto2 or editions file, or one that holds (at any
 * depth) a field protobuf-es keeps in another shape than the message's own, a wrapper of
 * google/protobuf/wrappers.proto in a singular field (held as its bare value) or a google.protobuf.Struct
 * outside google.protobuf.Value (held as a JSON object); and any message whose values do not fit their fields
 * (so that its error is protobuf-es' own). The tests in encode.test.ts compare both encoders' bytes over every
 * message of @dpp/proto and of a test schema holding every kind above (encode-test-schema.ts).
 *
 * A message may be given as a message or as its init shape (absent fields unset), as `create` would take it.
 */
import { create, toBinary, ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { Edition, FeatureSet_FieldPresence, isWrapperDesc } from "@bufbuild/protobuf/wkt";

/**
 * The value kinds (an enum is written as int32). The first seven are those of the services' messages today:
 * valueSize, writeValue and isZero handle them themselves and hand the others to otherValueSize, writeOther and
 * otherIsZero, which keeps the three small enough for V8 to inline them into the passes over a message (with all
 * kinds in one function, a passport answer took about 4 % longer).
 */
export type Kind =
  | "string"
  | "bytes"
  | "bool"
  | "int32"
  | "uint32"
  | "int64"
  | "message"
  | "uint64"
  | "sint32"
  | "sint64"
  | "fixed32"
  | "fixed64"
  | "sfixed32"
  | "sfixed64"
  | "double"
  | "float";

interface FieldPlan {
  localName: string;
  /** The oneof's local name when the field is a member of one. */
  oneof: string | undefined;
  /** Written only when the property is defined (proto3 `optional`, messages); otherwise when not zero. */
  explicit: boolean;
  shape: "single" | "list" | "map";
  /** The kind of the value (of each element of a list; of the value of a map entry). */
  kind: Kind;
  /** A list written as one length-delimited run of its values (proto3's default for scalars and enums). */
  packed: boolean;
  /** The tag's varint bytes. */
  tag: number[];
  /** The nested message's plan (kind "message"). */
  sub: MessagePlan | undefined;
  /** A map's key kind, and the one-byte tags of the key (field 1) and the value (field 2) of its entries. */
  keyKind: Kind | undefined;
  keyTag: number;
  valueTag: number;
}

interface MessagePlan {
  fields: FieldPlan[];
}

/** Thrown inside a pass when a value does not fit its field: the whole message goes to toBinary instead. */
const UNFIT = Symbol("unfit");

const WIRE_VARINT = 0;
const WIRE_I64 = 1;
export const WIRE_LEN = 2;
const WIRE_I32 = 5;

/** The largest float; a finite value beyond it is refused by protobuf-es (its `assertFloat32`). */
const FLOAT32_MAX = 3.4028234663852886e38;

const plans = new WeakMap<DescMessage, MessagePlan | null>();

function varintBytes(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}

/** The value kind of a scalar type (also the reader's, decode.ts). */
export function scalarKind(t: ScalarType): Kind {
  switch (t) {
    case ScalarType.STRING:
      return "string";
    case ScalarType.BYTES:
      return "bytes";
    case ScalarType.BOOL:
      return "bool";
    case ScalarType.INT32:
      return "int32";
    case ScalarType.UINT32:
      return "uint32";
    case ScalarType.INT64:
      return "int64";
    case ScalarType.UINT64:
      return "uint64";
    case ScalarType.SINT32:
      return "sint32";
    case ScalarType.SINT64:
      return "sint64";
    case ScalarType.FIXED32:
      return "fixed32";
    case ScalarType.FIXED64:
      return "fixed64";
    case ScalarType.SFIXED32:
      return "sfixed32";
    case ScalarType.SFIXED64:
      return "sfixed64";
    case ScalarType.DOUBLE:
      return "double";
    case ScalarType.FLOAT:
      return "float";
  }
}

/** The wire type of one value of a kind. */
export function wireOf(kind: Kind): number {
  switch (kind) {
    case "string":
    case "bytes":
    case "message":
      return WIRE_LEN;
    case "double":
    case "fixed64":
    case "sfixed64":
      return WIRE_I64;
    case "float":
    case "fixed32":
    case "sfixed32":
      return WIRE_I32;
    default:
      return WIRE_VARINT;
  }
}

/**
 * Whether protobuf-es holds the field's messages in their own shape. A wrapper (google/protobuf/wrappers.proto)
 * in a singular field outside a oneof is held as its bare value, and a google.protobuf.Struct anywhere but in
 * google.protobuf.Value as a JSON object: toBinary converts both back, the encoder does not.
 */
function heldAsMessage(f: DescField, message: DescMessage): boolean {
  if (f.fieldKind === "message" && f.oneof === undefined && isWrapperDesc(message)) return false;
  return message.typeName !== "google.protobuf.Struct" || f.parent.typeName === "google.protobuf.Value";
}

/** The field's kind when the encoder writes it; undefined when the field needs toBinary. */
function kindOf(f: DescField): Kind | undefined {
  switch (f.fieldKind) {
    case "scalar":
      return scalarKind(f.scalar);
    case "enum":
      // Written as int32. proto3 enums start at 0, the zero value an implicit field is not written with.
      return f.enum.values[0]?.number === 0 ? "int32" : undefined;
    case "message":
      return f.delimitedEncoding || !heldAsMessage(f, f.message) ? undefined : "message";
    case "list":
      switch (f.listKind) {
        case "message":
          return f.delimitedEncoding || !heldAsMessage(f, f.message) ? undefined : "message";
        case "enum":
          return f.enum.values[0]?.number === 0 ? "int32" : undefined;
        case "scalar":
          return scalarKind(f.scalar);
      }
      return undefined;
    case "map":
      switch (f.mapKind) {
        case "message":
          return heldAsMessage(f, f.message) ? "message" : undefined;
        case "enum":
          return f.enum.values[0]?.number === 0 ? "int32" : undefined;
        case "scalar":
          return scalarKind(f.scalar);
      }
      return undefined;
  }
}

/** The message a field holds (singular, in a list or as a map's value), if any. */
export const nestedOf = (f: DescField): DescMessage | undefined =>
  f.fieldKind === "message" ||
  (f.fieldKind === "list" && f.listKind === "message") ||
  (f.fieldKind === "map" && f.mapKind === "message")
    ? f.message
    : undefined;

/** Whether every field of the message, and of every message it holds, is of a kind the encoder writes. */
function supported(desc: DescMessage, seen: Set<DescMessage>): boolean {
  if (seen.has(desc)) return true;
  seen.add(desc);
  if (desc.file.edition !== Edition.EDITION_PROTO3) return false;
  for (const f of desc.fields) {
    if (kindOf(f) === undefined) return false;
    const nested = nestedOf(f);
    if (nested && !supported(nested, seen)) return false;
  }
  return true;
}

function planOf(desc: DescMessage): MessagePlan | null {
  const known = plans.get(desc);
  if (known !== undefined) return known;
  if (!supported(desc, new Set())) {
    plans.set(desc, null);
    return null;
  }
  // Set before its fields are planned: a message that holds itself (directly or not) gets this same object.
  const plan: MessagePlan = { fields: [] };
  plans.set(desc, plan);
  for (const f of [...desc.fields].sort((a, b) => a.number - b.number)) {
    const kind = kindOf(f)!;
    const nested = nestedOf(f);
    const shape: FieldPlan["shape"] =
      f.fieldKind === "list" ? "list" : f.fieldKind === "map" ? "map" : "single";
    const packed = f.fieldKind === "list" && f.listKind !== "message" && f.packed;
    const keyKind = f.fieldKind === "map" ? scalarKind(f.mapKey) : undefined;
    const wire = shape === "map" || packed ? WIRE_LEN : wireOf(kind);
    plan.fields.push({
      localName: f.localName,
      oneof: f.oneof?.localName,
      explicit: f.presence !== FeatureSet_FieldPresence.IMPLICIT || f.oneof !== undefined,
      shape,
      kind,
      packed,
      tag: varintBytes(((f.number << 3) | wire) >>> 0),
      sub: nested ? (planOf(nested) ?? undefined) : undefined,
      keyKind,
      keyTag: keyKind === undefined ? 0 : (1 << 3) | wireOf(keyKind),
      valueTag: (2 << 3) | wireOf(kind),
    });
  }
  return plan;
}

// ---- sizes ------------------------------------------------------------------------------------------------

function varintSize(n: number): number {
  return n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5;
}

/** UTF-8 bytes of a string, a lone surrogate as U+FFFD (3 bytes), as TextEncoder and Buffer write it. */
function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        i++; // a pair: 4 bytes for 2 code units
        n += 2;
      } else n += 2;
    } else n += 2;
  }
  return n;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** The int64 value as an unsigned 64-bit bigint; a safe non-negative number stays a number. */
function int64Of(v: unknown): number | bigint {
  if (typeof v === "number") {
    if (!Number.isSafeInteger(v)) throw UNFIT;
    return v >= 0 ? v : BigInt.asUintN(64, BigInt(v));
  }
  if (typeof v === "bigint") {
    if (v > 0x7fffffffffffffffn || v < -0x8000000000000000n) throw UNFIT;
    return v >= 0n && v <= MAX_SAFE ? Number(v) : BigInt.asUintN(64, v);
  }
  if (typeof v === "string" && /^-?\d+$/.test(v)) return int64Of(BigInt(v));
  throw UNFIT;
}

function uvarint64Size(v: number | bigint): number {
  if (typeof v === "number") {
    let n = 1;
    while (v >= 0x80) {
      v = Math.floor(v / 128);
      n++;
    }
    return n;
  }
  let n = 1;
  while (v >= 0x80n) {
    v >>= 7n;
    n++;
  }
  return n;
}

/** The uint64 value as an unsigned 64-bit bigint; a safe non-negative number stays a number. */
function uint64Of(v: unknown): number | bigint {
  if (typeof v === "number") {
    if (!Number.isSafeInteger(v) || v < 0) throw UNFIT;
    return v;
  }
  if (typeof v === "bigint") {
    if (v > 0xffffffffffffffffn || v < 0n) throw UNFIT;
    return v <= MAX_SAFE ? Number(v) : v;
  }
  if (typeof v === "string" && /^\d+$/.test(v)) return uint64Of(BigInt(v));
  throw UNFIT;
}

/** The sint64 value zigzag-encoded, as an unsigned 64-bit bigint or, when it is safe, a number. */
function sint64Of(v: unknown): number | bigint {
  if (typeof v === "number" && Number.isSafeInteger(v) && v <= 2 ** 51 && v >= -(2 ** 51))
    return v >= 0 ? v * 2 : -v * 2 - 1;
  let b: bigint;
  if (typeof v === "number") {
    if (!Number.isSafeInteger(v)) throw UNFIT;
    b = BigInt(v);
  } else if (typeof v === "bigint") b = v;
  else if (typeof v === "string" && /^-?\d+$/.test(v)) b = BigInt(v);
  else throw UNFIT;
  if (b > 0x7fffffffffffffffn || b < -0x8000000000000000n) throw UNFIT;
  const z = BigInt.asUintN(64, (b << 1n) ^ (b >> 63n));
  return z <= MAX_SAFE ? Number(z) : z;
}

/**
 * Whether an implicit field's value is its zero, not written, as protobuf-es' `isScalarZeroValue` (and, for an
 * enum, `!== values[0].number`) decides. A 32-bit integer is compared strictly: a value protobuf-es alone takes
 * for zero ("0", 0n) is no number, which the encoder refuses (UNFIT) and leaves to toBinary.
 */
function isZero(kind: Kind, v: unknown): boolean {
  switch (kind) {
    case "string":
      return v === "";
    case "int32":
    case "uint32":
      return v === 0;
    case "bool":
      return v === false;
    case "int64":
      // Loose, as protobuf-es compares: 0, 0n and "0" (and "-0", "00") are the zero of a 64-bit integer.
      return v == 0;
    case "bytes":
      return v instanceof Uint8Array && v.byteLength === 0;
    default:
      return otherIsZero(kind, v);
  }
}

/** isZero of the other kinds (see Kind). */
function otherIsZero(kind: Kind, v: unknown): boolean {
  switch (kind) {
    case "uint64":
    case "sint64":
    case "fixed64":
    case "sfixed64":
      return v == 0;
    case "double":
    case "float":
      // -0 is written.
      return Object.is(v, 0);
    default:
      return v === 0;
  }
}

const isInt32 = (v: unknown): v is number => typeof v === "number" && (v | 0) === v;
const isUint32 = (v: unknown): v is number => typeof v === "number" && v >>> 0 === v;

/**
 * The bytes of one value without its tag. Lengths of strings and nested messages are pushed to `lens` in the
 * order the write pass meets them.
 */
function valueSize(kind: Kind, sub: MessagePlan | undefined, v: unknown, lens: number[]): number {
  switch (kind) {
    case "string": {
      if (typeof v !== "string") throw UNFIT;
      const n = utf8Length(v);
      lens.push(n);
      return varintSize(n) + n;
    }
    case "bytes": {
      if (!(v instanceof Uint8Array)) throw UNFIT;
      return varintSize(v.length) + v.length;
    }
    case "bool":
      if (typeof v !== "boolean") throw UNFIT;
      return 1;
    case "int32":
      if (!isInt32(v)) throw UNFIT;
      return v < 0 ? 10 : varintSize(v);
    case "uint32":
      if (!isUint32(v)) throw UNFIT;
      return varintSize(v);
    case "int64":
      return uvarint64Size(int64Of(v));
    case "message": {
      if (typeof v !== "object" || v === null) throw UNFIT;
      const slot = lens.length;
      lens.push(0);
      const n = messageSize(sub!, v as Record<string, unknown>, lens);
      lens[slot] = n;
      return varintSize(n) + n;
    }
    default:
      return otherValueSize(kind, v);
  }
}

/** valueSize of the other kinds (see Kind). */
function otherValueSize(kind: Kind, v: unknown): number {
  switch (kind) {
    case "uint64":
      return uvarint64Size(uint64Of(v));
    case "sint32":
      if (!isInt32(v)) throw UNFIT;
      return varintSize(((v << 1) ^ (v >> 31)) >>> 0);
    case "sint64":
      return uvarint64Size(sint64Of(v));
    case "fixed32":
      if (!isUint32(v)) throw UNFIT;
      return 4;
    case "sfixed32":
      if (!isInt32(v)) throw UNFIT;
      return 4;
    case "fixed64":
      uint64Of(v);
      return 8;
    case "sfixed64":
      int64Of(v);
      return 8;
    case "double":
      if (typeof v !== "number") throw UNFIT;
      return 8;
    case "float":
      // NaN and the infinities fit; a finite value beyond the float range does not.
      if (typeof v !== "number" || ((v > FLOAT32_MAX || v < -FLOAT32_MAX) && Number.isFinite(v))) throw UNFIT;
      return 4;
    default:
      throw new Error(`encodeMessage: no size for ${kind}`);
  }
}

/**
 * A map's key as protobuf-es reads it from the object's property name (a JavaScript object's keys are texts).
 * Only a name protobuf-es itself writes for a key (`String(key)`) is taken; any other spelling ("007", "1e3",
 * "yes") goes to toBinary with the whole message.
 */
function mapKey(kind: Kind, k: string): unknown {
  switch (kind) {
    case "string":
      return k;
    case "bool":
      if (k === "true") return true;
      if (k === "false") return false;
      throw UNFIT;
    case "int64":
    case "uint64":
    case "sint64":
    case "fixed64":
    case "sfixed64":
      // int64Of and the others read a decimal text as BigInt does.
      return k;
    default: {
      const n = Number(k);
      if (String(n) !== k) throw UNFIT;
      return n;
    }
  }
}

/** The value of a field when it is written, or undefined when it is not set. */
function valueOf(f: FieldPlan, m: Record<string, unknown>): unknown {
  if (f.oneof !== undefined) {
    const o = m[f.oneof] as { case?: string; value?: unknown } | undefined;
    if (o === undefined || o.case !== f.localName) return undefined;
    // A member chosen without a value is written by protobuf-es as its zero: left to toBinary.
    if (o.value === undefined) throw UNFIT;
    return o.value;
  }
  const v = m[f.localName];
  if (v === undefined || f.explicit) return v;
  return isZero(f.kind, v) ? undefined : v;
}

function unknownOf(
  m: Record<string, unknown>,
): { no: number; wireType: number; data: Uint8Array }[] | undefined {
  const u = m.$unknown as { no: number; wireType: number; data: Uint8Array }[] | undefined;
  return u !== undefined && u.length > 0 ? u : undefined;
}

function messageSize(plan: MessagePlan, m: Record<string, unknown>, lens: number[]): number {
  let n = 0;
  for (const f of plan.fields) {
    if (f.shape === "single") {
      const v = valueOf(f, m);
      if (v !== undefined) n += f.tag.length + valueSize(f.kind, f.sub, v, lens);
    } else if (f.shape === "list") {
      const list = m[f.localName];
      if (list === undefined) continue;
      if (!Array.isArray(list)) throw UNFIT;
      if (f.packed) {
        // One run of the values after the field's tag and length; none at all for an empty list.
        if (list.length === 0) continue;
        const slot = lens.length;
        lens.push(0);
        let run = 0;
        for (const v of list) run += valueSize(f.kind, undefined, v, lens);
        lens[slot] = run;
        n += f.tag.length + varintSize(run) + run;
      } else for (const v of list) n += f.tag.length + valueSize(f.kind, f.sub, v, lens);
    } else {
      const map = m[f.localName];
      if (map === undefined) continue;
      if (typeof map !== "object" || map === null) throw UNFIT;
      for (const [k, v] of Object.entries(map)) {
        // An entry: key (field 1) and value (field 2), both written whatever they hold.
        const slot = lens.length;
        lens.push(0);
        const entry =
          1 +
          valueSize(f.keyKind!, undefined, mapKey(f.keyKind!, k), lens) +
          1 +
          valueSize(f.kind, f.sub, v, lens);
        lens[slot] = entry;
        n += f.tag.length + varintSize(entry) + entry;
      }
    }
  }
  const unknown = unknownOf(m);
  if (unknown) {
    for (const u of unknown) n += varintSize(((u.no << 3) | u.wireType) >>> 0) + u.data.length;
  }
  return n;
}

// ---- bytes ------------------------------------------------------------------------------------------------

/** Floating-point values are written through a DataView, as protobuf-es writes them (NaN's bits included). */
const scratch = new DataView(new ArrayBuffer(8));
const scratchBytes = new Uint8Array(scratch.buffer);

class Out {
  pos = 0;
  lensAt = 0;
  constructor(
    readonly buf: Buffer,
    readonly lens: number[],
  ) {}

  varint(n: number): void {
    const buf = this.buf;
    while (n > 0x7f) {
      buf[this.pos++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    buf[this.pos++] = n;
  }

  uvarint64(v: number | bigint): void {
    const buf = this.buf;
    if (typeof v === "number") {
      while (v >= 0x80) {
        buf[this.pos++] = (v % 128) | 0x80;
        v = Math.floor(v / 128);
      }
      buf[this.pos++] = v;
      return;
    }
    while (v >= 0x80n) {
      buf[this.pos++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    buf[this.pos++] = Number(v);
  }

  raw(tag: number[]): void {
    for (let i = 0; i < tag.length; i++) this.buf[this.pos++] = tag[i]!;
  }

  string(s: string): void {
    const n = this.lens[this.lensAt++]!;
    this.varint(n);
    if (n === s.length && n < 48) {
      // ASCII (as many bytes as code units): short strings are copied here rather than through C++.
      const buf = this.buf;
      for (let i = 0; i < n; i++) buf[this.pos++] = s.charCodeAt(i);
      return;
    }
    this.pos += this.buf.write(s, this.pos, n, "utf8");
  }

  bytes(b: Uint8Array): void {
    this.varint(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  /** 4 little-endian bytes of a 32-bit value (signed or not: the same bits). */
  fixed32(v: number): void {
    this.buf.writeUInt32LE(v >>> 0, this.pos);
    this.pos += 4;
  }

  /** 8 little-endian bytes of an unsigned 64-bit value. */
  fixed64(v: number | bigint): void {
    if (typeof v === "number") {
      const low = v % 0x100000000;
      this.buf.writeUInt32LE(low, this.pos);
      this.buf.writeUInt32LE((v - low) / 0x100000000, this.pos + 4);
    } else this.buf.writeBigUInt64LE(v, this.pos);
    this.pos += 8;
  }

  /** The `count` bytes written into the scratch view. */
  scratch(count: number): void {
    for (let i = 0; i < count; i++) this.buf[this.pos++] = scratchBytes[i]!;
  }
}

function writeValue(out: Out, kind: Kind, sub: MessagePlan | undefined, v: unknown): void {
  switch (kind) {
    case "string":
      out.string(v as string);
      return;
    case "bytes":
      out.bytes(v as Uint8Array);
      return;
    case "bool":
      out.buf[out.pos++] = v ? 1 : 0;
      return;
    case "int32":
      if ((v as number) < 0) out.uvarint64(BigInt.asUintN(64, BigInt(v as number)));
      else out.varint(v as number);
      return;
    case "uint32":
      out.varint(v as number);
      return;
    case "int64":
      out.uvarint64(int64Of(v));
      return;
    case "message":
      out.varint(out.lens[out.lensAt++]!);
      writeMessage(out, sub!, v as Record<string, unknown>);
      return;
    default:
      writeOther(out, kind, v);
  }
}

/** writeValue of the other kinds (see Kind). */
function writeOther(out: Out, kind: Kind, v: unknown): void {
  switch (kind) {
    case "uint64":
      out.uvarint64(uint64Of(v));
      return;
    case "sint32":
      out.varint((((v as number) << 1) ^ ((v as number) >> 31)) >>> 0);
      return;
    case "sint64":
      out.uvarint64(sint64Of(v));
      return;
    case "fixed32":
    case "sfixed32":
      out.fixed32(v as number);
      return;
    case "fixed64":
      out.fixed64(uint64Of(v));
      return;
    case "sfixed64":
      out.fixed64(int64Of(v));
      return;
    case "double":
      scratch.setFloat64(0, v as number, true);
      out.scratch(8);
      return;
    case "float":
      scratch.setFloat32(0, v as number, true);
      out.scratch(4);
      return;
    default:
      throw new Error(`encodeMessage: cannot write ${kind}`);
  }
}

function writeMessage(out: Out, plan: MessagePlan, m: Record<string, unknown>): void {
  for (const f of plan.fields) {
    if (f.shape === "single") {
      const v = valueOf(f, m);
      if (v === undefined) continue;
      out.raw(f.tag);
      writeValue(out, f.kind, f.sub, v);
    } else if (f.shape === "list") {
      const list = m[f.localName] as unknown[] | undefined;
      if (list === undefined) continue;
      if (f.packed) {
        if (list.length === 0) continue;
        out.raw(f.tag);
        out.varint(out.lens[out.lensAt++]!);
        for (const v of list) writeValue(out, f.kind, undefined, v);
      } else {
        for (const v of list) {
          out.raw(f.tag);
          writeValue(out, f.kind, f.sub, v);
        }
      }
    } else {
      const map = m[f.localName] as Record<string, unknown> | undefined;
      if (map === undefined) continue;
      for (const [k, v] of Object.entries(map)) {
        out.raw(f.tag);
        out.varint(out.lens[out.lensAt++]!);
        out.buf[out.pos++] = f.keyTag;
        writeValue(out, f.keyKind!, undefined, mapKey(f.keyKind!, k));
        out.buf[out.pos++] = f.valueTag;
        writeValue(out, f.kind, f.sub, v);
      }
    }
  }
  const unknown = unknownOf(m);
  if (unknown) {
    for (const u of unknown) {
      out.varint(((u.no << 3) | u.wireType) >>> 0);
      out.buf.set(u.data, out.pos);
      out.pos += u.data.length;
    }
  }
}

/**
 * The binary form of `message` (a message of `schema`, or its init shape): the bytes `toBinary` gives for it.
 * The answer is a Buffer of its own size.
 */
export function encodeMessage(schema: DescMessage, message: object): Buffer {
  const plan = planOf(schema);
  if (plan !== null) {
    try {
      const lens: number[] = [];
      const size = messageSize(plan, message as Record<string, unknown>, lens);
      const out = new Out(Buffer.allocUnsafe(size), lens);
      writeMessage(out, plan, message as Record<string, unknown>);
      if (out.pos === size) return out.buf;
      // The two passes disagree: a fault of this file. toBinary's bytes are right; tests make it loud.
      if (strict) throw new Error(`encodeMessage: ${schema.typeName} sized ${size} bytes, wrote ${out.pos}`);
    } catch (err) {
      if (err !== UNFIT || strict === "all") throw err;
    }
  }
  const bytes = toBinary(schema, create(schema, message as never));
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

let strict: false | "sizes" | "all" = false;

/**
 * For tests: "sizes" makes a disagreement between the two passes throw instead of falling back to toBinary;
 * "all" also makes a value that does not fit its field throw the encoder's own marker.
 */
export function strictEncoding(mode: false | "sizes" | "all"): void {
  strict = mode;
}

/** Whether `encodeMessage` writes messages of `schema` itself (false: protobuf-es' toBinary does). */
export function encodesItself(schema: DescMessage): boolean {
  return planOf(schema) !== null;
}
