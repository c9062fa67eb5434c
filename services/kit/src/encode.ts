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
 * fields last), for the field kinds the services' proto3 files use: strings, bytes, bool, int32, uint32, int64,
 * enums, messages, oneofs, repeated strings and messages, and maps of strings. A schema with anything else
 * (another scalar type, packed lists, groups, proto2 or editions) is written by `toBinary`, as is a message
 * whose values do not fit their fields (so that its error is protobuf-es' own). The test in encode.test.ts
 * compares both encoders' bytes over every message of @dpp/proto.
 *
 * A message may be given as a message or as its init shape (absent fields unset), as `create` would take it.
 */
import { create, toBinary, ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { Edition, FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";

type Kind = "string" | "bytes" | "bool" | "int32" | "uint32" | "int64" | "message";

interface FieldPlan {
  localName: string;
  /** The oneof's local name when the field is a member of one. */
  oneof: string | undefined;
  /** Written only when the property is defined (proto3 `optional`, messages); otherwise when not zero. */
  explicit: boolean;
  shape: "single" | "list" | "map";
  kind: Kind;
  /** The tag's varint bytes. */
  tag: number[];
  /** The nested message's plan (kind "message"). */
  sub: MessagePlan | undefined;
}

interface MessagePlan {
  fields: FieldPlan[];
}

/** Thrown inside a pass when a value does not fit its field: the whole message goes to toBinary instead. */
const UNFIT = Symbol("unfit");

const WIRE_VARINT = 0;
const WIRE_LEN = 2;

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

function scalarKind(t: ScalarType): Kind | undefined {
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
    default:
      return undefined;
  }
}

/** The field's kind when the encoder writes it; undefined when the field needs toBinary. */
function kindOf(f: DescField): Kind | undefined {
  switch (f.fieldKind) {
    case "scalar": {
      const kind = scalarKind(f.scalar);
      return kind === "int64" && f.longAsString ? undefined : kind;
    }
    case "enum":
      // proto3 enums start at 0, the zero value an implicit field is not written with.
      return f.enum.values[0]?.number === 0 ? "int32" : undefined;
    case "message":
      return f.delimitedEncoding ? undefined : "message";
    case "list":
      if (f.listKind === "message") return f.delimitedEncoding ? undefined : "message";
      if (f.listKind === "scalar" && !f.packed) {
        // Only lists written element by element with a length each: strings and bytes.
        const kind = scalarKind(f.scalar);
        return kind === "string" || kind === "bytes" ? kind : undefined;
      }
      return undefined;
    case "map":
      return f.mapKind === "scalar" && f.mapKey === ScalarType.STRING && f.scalar === ScalarType.STRING
        ? "string"
        : undefined;
  }
}

const nestedOf = (f: DescField): DescMessage | undefined =>
  f.fieldKind === "message" || (f.fieldKind === "list" && f.listKind === "message") ? f.message : undefined;

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
    const wire =
      shape === "map" || kind === "string" || kind === "bytes" || kind === "message" ? WIRE_LEN : WIRE_VARINT;
    plan.fields.push({
      localName: f.localName,
      oneof: f.oneof?.localName,
      explicit: f.presence !== FeatureSet_FieldPresence.IMPLICIT || f.oneof !== undefined,
      shape,
      kind,
      tag: varintBytes((f.number << 3) | wire),
      sub: nested ? (planOf(nested) ?? undefined) : undefined,
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

function isZero(kind: Kind, v: unknown): boolean {
  switch (kind) {
    case "string":
      return v === "";
    case "bool":
      return v === false;
    case "bytes":
      return (v as Uint8Array).length === 0;
    case "int64":
      return v === 0n || v === 0 || v === "0";
    default:
      return v === 0;
  }
}

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
      if (typeof v !== "number" || (v | 0) !== v) throw UNFIT;
      return v < 0 ? 10 : varintSize(v);
    case "uint32":
      if (typeof v !== "number" || v >>> 0 !== v) throw UNFIT;
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
  }
}

/** The value of a field when it is written, or undefined when it is not set. */
function valueOf(f: FieldPlan, m: Record<string, unknown>): unknown {
  if (f.oneof !== undefined) {
    const o = m[f.oneof] as { case?: string; value?: unknown } | undefined;
    return o !== undefined && o.case === f.localName ? o.value : undefined;
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
      for (const v of list) n += f.tag.length + valueSize(f.kind, f.sub, v, lens);
    } else {
      const map = m[f.localName];
      if (map === undefined) continue;
      if (typeof map !== "object" || map === null) throw UNFIT;
      for (const [k, v] of Object.entries(map)) {
        // An entry: key (field 1) and value (field 2), both written whatever they hold.
        const slot = lens.length;
        lens.push(0);
        const entry =
          1 + valueSize("string", undefined, k, lens) + 1 + valueSize("string", undefined, v, lens);
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
      for (const v of list) {
        out.raw(f.tag);
        writeValue(out, f.kind, f.sub, v);
      }
    } else {
      const map = m[f.localName] as Record<string, string> | undefined;
      if (map === undefined) continue;
      for (const [k, v] of Object.entries(map)) {
        out.raw(f.tag);
        out.varint(out.lens[out.lensAt++]!);
        out.buf[out.pos++] = (1 << 3) | WIRE_LEN;
        out.string(k);
        out.buf[out.pos++] = (2 << 3) | WIRE_LEN;
        out.string(v);
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
