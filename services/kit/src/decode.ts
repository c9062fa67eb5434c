/**
 * The services' messages read from their binary form: the message `fromBinary` gives, built directly.
 *
 * protobuf-es' `fromBinary` reads through its reflection API: each message is made by `create` (a walk over the
 * descriptor's members), each field set through a reflective setter that checks and converts it, each list
 * element added through a reflective list. For a batch of 1000 variants that was about 5 ms of the gateway's
 * answer and as much of the variants service's request, on the benchmark machine, with the garbage it leaves.
 * Here each message schema gets a plan once (its fields by number, its zero values), and the bytes are read
 * into plain objects in one pass: about a fifth of the time.
 *
 * It reads what it knows exactly as `fromBinary` reads it, and leaves everything else to `fromBinary`, whole:
 * - a schema `encodeMessage` leaves to `toBinary` (encode.ts: another syntax than proto3, a field protobuf-es
 *   holds in another shape than the message's own);
 * - bytes it would read otherwise than protobuf-es: a field number the schema does not know (protobuf-es keeps
 *   it in `$unknown`), a wire type other than the field's, a singular message or a oneof's message met twice
 *   (protobuf-es merges them), a map entry with other fields than its key and value, and anything malformed
 *   (protobuf-es' own error is then the one thrown).
 * The 64-bit, floating-point and fixed-width scalars are read by protobuf-es' own BinaryReader, at this
 * reader's position; strings of non-ASCII text by its own UTF-8 decoder (with its check where the field asks
 * for it). decode.test.ts compares both readers' messages over every message of @dpp/proto and of the encoder's
 * test schema.
 */
import { fromBinary, ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { scalarZeroValue } from "@bufbuild/protobuf/reflect";
import { BinaryReader, getTextEncoding } from "@bufbuild/protobuf/wire";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { encodesItself, nestedOf, scalarKind, WIRE_LEN, wireOf as kindWire, type Kind } from "./encode";

const wireOf = (t: ScalarType) => kindWire(scalarKind(t));

/** Thrown inside a read when the bytes are not what this reader reads as fromBinary does: fromBinary reads them. */
const ASIDE = Symbol("aside");

type Value =
  | "string"
  | "bytes"
  | "bool"
  | "int32"
  | "uint32"
  | "sint32"
  | "message"
  /** Read by protobuf-es' BinaryReader (64-bit, fixed-width and floating-point scalars). */
  | "reader";

interface FieldRead {
  localName: string;
  /** The oneof's local name when the field is a member of one. */
  oneof: string | undefined;
  shape: "single" | "list" | "map";
  value: Value;
  scalar: ScalarType;
  /** The wire type of one value (a packed list's run is length-delimited), of a map's entries for a map. */
  wire: number;
  /** A map's: the wire type of its entries' value. */
  valueWire: number;
  /** A scalar list that protobuf-es reads packed when it arrives length-delimited. */
  packable: boolean;
  /** A 64-bit integer held as a decimal text (jstype = JS_STRING). */
  longAsString: boolean;
  /** Whether a non-ASCII string is checked as UTF-8 (an invalid one throws). */
  strictUtf8: boolean;
  sub: MessageRead | undefined;
  /** A map's key: its read, and its zero (an entry without one). Its value's read is the field's. */
  mapKey: FieldRead | undefined;
  mapKeyZero: unknown;
  mapValueZero: (() => unknown) | undefined;
}

interface MessageRead {
  typeName: string;
  /** By field number; sparse. */
  byNumber: (FieldRead | undefined)[];
  /** The zero message's members, in the order `create` sets them. */
  zeros: { localName: string; zero: () => unknown }[];
}

const plans = new WeakMap<DescMessage, MessageRead | null>();

/** The kinds read here; the others (64-bit, fixed-width, floating-point) by protobuf-es' reader. */
const READ_HERE: ReadonlySet<Kind> = new Set<Kind>(["string", "bytes", "bool", "int32", "uint32", "sint32"]);

function valueOf(t: ScalarType): Value {
  const kind = scalarKind(t);
  return READ_HERE.has(kind) ? (kind as Value) : "reader";
}

/** A zero value, fresh where it is mutable (bytes, lists, maps, a oneof's holder). */
function zeroOf(f: DescField): () => unknown {
  if (f.oneof) return () => ({ case: undefined });
  switch (f.fieldKind) {
    case "list":
      return () => [];
    case "map":
      return () => ({});
    case "enum": {
      const n = f.enum.values[0]!.number;
      return () => n;
    }
    case "scalar": {
      if (f.scalar === ScalarType.BYTES) return () => new Uint8Array(0);
      const z = scalarZeroValue(f.scalar, f.longAsString);
      return () => z;
    }
    default:
      throw new Error(`decode: no zero for ${f.toString()}`);
  }
}

function planOf(desc: DescMessage): MessageRead | null {
  const known = plans.get(desc);
  if (known !== undefined) return known;
  if (!encodesItself(desc)) {
    plans.set(desc, null);
    return null;
  }
  // Set before its fields are planned: a message that holds itself gets this same object.
  const plan: MessageRead = { typeName: desc.typeName, byNumber: [], zeros: [] };
  plans.set(desc, plan);
  for (const m of desc.members) {
    if (m.kind === "oneof") plan.zeros.push({ localName: m.localName, zero: () => ({ case: undefined }) });
    else if (m.presence === FeatureSet_FieldPresence.IMPLICIT)
      plan.zeros.push({ localName: m.localName, zero: zeroOf(m) });
  }
  for (const f of desc.fields) {
    const shape: FieldRead["shape"] =
      f.fieldKind === "list" ? "list" : f.fieldKind === "map" ? "map" : "single";
    const nested = nestedOf(f);
    // An enum is read as an int32 (proto3 enums are open: any number is kept).
    const scalar =
      f.fieldKind === "scalar" ||
      (f.fieldKind === "list" && f.listKind === "scalar") ||
      (f.fieldKind === "map" && f.mapKind === "scalar")
        ? f.scalar
        : ScalarType.INT32;
    const value: Value = nested ? "message" : valueOf(scalar);
    plan.byNumber[f.number] = {
      localName: f.localName,
      oneof: f.oneof?.localName,
      shape,
      value,
      scalar,
      wire: shape === "map" || nested ? WIRE_LEN : wireOf(scalar),
      valueWire: nested ? WIRE_LEN : wireOf(scalar),
      packable: shape === "list" && !nested && scalar !== ScalarType.STRING && scalar !== ScalarType.BYTES,
      longAsString:
        f.fieldKind === "scalar" || (f.fieldKind === "list" && f.listKind === "scalar")
          ? f.longAsString
          : false,
      strictUtf8: f.utf8Validation === true,
      sub: nested ? (planOf(nested) ?? undefined) : undefined,
      mapKey: f.fieldKind === "map" ? keyRead(f.mapKey, f.utf8Validation === true) : undefined,
      mapKeyZero: f.fieldKind === "map" ? scalarZeroValue(f.mapKey, false) : undefined,
      mapValueZero:
        f.fieldKind !== "map"
          ? undefined
          : f.mapKind === "message"
            ? undefined
            : f.mapKind === "enum"
              ? () => f.enum.values[0]!.number
              : f.scalar === ScalarType.BYTES
                ? () => new Uint8Array(0)
                : () => scalarZeroValue(f.scalar, false),
    };
  }
  return plan;
}

/** The read of a map's key. */
function keyRead(t: ScalarType, strictUtf8: boolean): FieldRead {
  return {
    localName: "",
    oneof: undefined,
    shape: "single",
    value: valueOf(t),
    scalar: t,
    wire: wireOf(t),
    valueWire: wireOf(t),
    packable: false,
    longAsString: false,
    strictUtf8,
    sub: undefined,
    mapKey: undefined,
    mapKeyZero: undefined,
    mapValueZero: undefined,
  };
}

// ---- the read ------------------------------------------------------------------------------------------------

/** The bytes being read (a Buffer over the caller's bytes, for its latin1 slices) and the position in them. */
let buf: Buffer = Buffer.alloc(0);
let input: Uint8Array = buf;
let pos = 0;
/** protobuf-es' reader over `input`, made when a scalar needs it. */
let reader: BinaryReader | undefined;
let readerOf: Uint8Array | undefined;
let depth = 0;

function varint32(): number {
  let b = buf[pos++]!;
  let v = b & 0x7f;
  if (b < 0x80) return v;
  b = buf[pos++]!;
  v |= (b & 0x7f) << 7;
  if (b < 0x80) return v;
  b = buf[pos++]!;
  v |= (b & 0x7f) << 14;
  if (b < 0x80) return v;
  b = buf[pos++]!;
  v |= (b & 0x7f) << 21;
  if (b < 0x80) return v >>> 0;
  b = buf[pos++]!;
  v |= (b & 0x0f) << 28;
  // Up to five more bytes of a sign-extended value: their bits are beyond 32 and dropped, as protobuf-es does.
  for (let i = 0; b >= 0x80 && i < 5; i++) b = buf[pos++]!;
  if (b >= 0x80 || pos > buf.length) throw ASIDE;
  return v >>> 0;
}

/** A length-delimited run's end, checked against the bytes' end. */
function lenEnd(end: number): number {
  const len = varint32();
  const e = pos + len;
  if (e > end || pos > end) throw ASIDE;
  return e;
}

/** Node's Buffer method behind `toString("latin1", ...)`, without its dispatch on the encoding's name. */
interface Latin1 {
  latin1Slice(start: number, end: number): string;
}

function string(end: number, strict: boolean): string {
  const e = lenEnd(end);
  const start = pos;
  pos = e;
  for (let i = start; i < e; i++)
    if (buf[i]! >= 0x80) return getTextEncoding().decodeUtf8(input.subarray(start, e), strict);
  return (buf as Buffer & Latin1).latin1Slice(start, e);
}

function bool(): boolean {
  // A 64-bit varint: any bit set is true.
  let any = 0;
  for (let i = 0; i < 10; i++) {
    const b = buf[pos++]!;
    any |= b & 0x7f;
    if (b < 0x80) return any !== 0;
  }
  throw ASIDE;
}

/** A scalar protobuf-es' reader reads (and converts as its setter does), at this position. */
function viaReader(f: FieldRead): unknown {
  if (reader === undefined || readerOf !== input) {
    reader = new BinaryReader(input);
    readerOf = input;
  }
  reader.pos = pos;
  let v: unknown;
  switch (f.scalar) {
    case ScalarType.INT64:
      v = reader.int64();
      break;
    case ScalarType.UINT64:
      v = reader.uint64();
      break;
    case ScalarType.SINT64:
      v = reader.sint64();
      break;
    case ScalarType.FIXED64:
      v = reader.fixed64();
      break;
    case ScalarType.SFIXED64:
      v = reader.sfixed64();
      break;
    case ScalarType.FIXED32:
      v = reader.fixed32();
      break;
    case ScalarType.SFIXED32:
      v = reader.sfixed32();
      break;
    case ScalarType.DOUBLE:
      v = reader.double();
      break;
    case ScalarType.FLOAT:
      v = reader.float();
      break;
    default:
      throw ASIDE;
  }
  pos = reader.pos;
  if (pos > buf.length) throw ASIDE;
  return f.longAsString && typeof v === "bigint" ? String(v) : v;
}

function scalar(f: FieldRead, end: number): unknown {
  switch (f.value) {
    case "string":
      return string(end, f.strictUtf8);
    case "bytes": {
      const e = lenEnd(end);
      const start = pos;
      pos = e;
      return input.subarray(start, e);
    }
    case "bool":
      return bool();
    case "int32":
      return varint32() | 0;
    case "uint32":
      return varint32();
    case "sint32": {
      const n = varint32();
      return (n >>> 1) ^ -(n & 1);
    }
    default:
      return viaReader(f);
  }
}

function message(plan: MessageRead, end: number): Record<string, unknown> {
  if (++depth > 100) throw ASIDE;
  const msg: Record<string, unknown> = { $typeName: plan.typeName };
  for (const z of plan.zeros) msg[z.localName] = z.zero();
  while (pos < end) {
    const tag = varint32();
    const f = plan.byNumber[tag >>> 3];
    const wire = tag & 7;
    if (f === undefined) throw ASIDE;
    if (f.shape === "list") {
      const list = msg[f.localName] as unknown[];
      if (f.value === "message") {
        if (wire !== WIRE_LEN) throw ASIDE;
        const e = lenEnd(end);
        list.push(message(f.sub!, e));
        if (pos !== e) throw ASIDE;
      } else if (wire === WIRE_LEN && f.packable) {
        const e = lenEnd(end);
        while (pos < e) list.push(scalar(f, e));
        if (pos !== e) throw ASIDE;
      } else {
        if (wire !== f.wire) throw ASIDE;
        list.push(scalar(f, end));
      }
    } else if (f.shape === "map") {
      if (wire !== WIRE_LEN) throw ASIDE;
      mapEntry(f, msg[f.localName] as Record<string, unknown>, lenEnd(end));
    } else {
      if (wire !== f.wire) throw ASIDE;
      let v: unknown;
      if (f.value === "message") {
        // Met twice, protobuf-es merges the two: read aside.
        const held = f.oneof ? (msg[f.oneof] as { case?: string }).case === f.localName : f.localName in msg;
        if (held) throw ASIDE;
        const e = lenEnd(end);
        v = message(f.sub!, e);
        if (pos !== e) throw ASIDE;
      } else v = scalar(f, end);
      if (f.oneof) msg[f.oneof] = { case: f.localName, value: v };
      else msg[f.localName] = v;
    }
  }
  if (pos !== end) throw ASIDE;
  depth--;
  return msg;
}

function mapEntry(f: FieldRead, map: Record<string, unknown>, end: number): void {
  const k = f.mapKey!;
  let key: unknown;
  let value: unknown;
  while (pos < end) {
    const tag = varint32();
    if (tag === ((1 << 3) | k.wire)) key = scalar(k, end);
    else if (tag === ((2 << 3) | f.valueWire)) {
      if (f.value === "message") {
        const e = lenEnd(end);
        value = message(f.sub!, e);
        if (pos !== e) throw ASIDE;
      } else value = scalar(f, end);
    } else throw ASIDE;
  }
  if (pos !== end) throw ASIDE;
  if (value === undefined)
    value = f.value === "message" ? message(f.sub!, pos) /* an empty message */ : f.mapValueZero!();
  // As protobuf-es keys a map: a string or a number as it is (a property name), another key as its text.
  key ??= f.mapKeyZero;
  map[typeof key === "string" || typeof key === "number" ? key : String(key)] = value;
}

/**
 * The message of `schema` that `bytes` hold: the object `fromBinary(schema, bytes)` answers (bytes fields are
 * views of `bytes`, as there).
 */
export function decodeMessage<T = unknown>(schema: DescMessage, bytes: Uint8Array): T {
  const plan = planOf(schema);
  if (plan !== null) {
    input = bytes;
    buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    pos = 0;
    depth = 0;
    try {
      return message(plan, buf.length) as T;
    } catch (err) {
      // Bytes this reader leaves to fromBinary, or that protobuf-es' reader refused: fromBinary reads them (and
      // throws its own error for malformed ones).
      if (strict && err !== ASIDE) throw err;
      readAside++;
    } finally {
      input = buf = EMPTY;
      reader = readerOf = undefined;
    }
  }
  return fromBinary(schema, bytes) as T;
}

const EMPTY = Buffer.alloc(0);

let strict = false;
let readAside = 0;

/** For tests: how many messages this reader began and left to fromBinary since the process started. */
export function decodedAside(): number {
  return readAside;
}

/** For tests: an error of this reader's own (not bytes it leaves to fromBinary) is thrown, not read aside. */
export function strictDecoding(on: boolean): void {
  strict = on;
}

/** Whether `decodeMessage` reads messages of `schema` itself (false: protobuf-es' fromBinary does). */
export function decodesItself(schema: DescMessage): boolean {
  return planOf(schema) !== null;
}
