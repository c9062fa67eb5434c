/**
 * A test-only schema for the message encoder's tests (src/encode.test.ts), built in code as the descriptor
 * `protoc` would make of the proto below, and loaded with protobuf-es' own registry: no generated file, no
 * production proto. Its proto3 file holds every field kind the encoder writes: the fifteen scalar types, an
 * enum (negative and large values among its own), nested and recursive messages, proto3 `optional`, a oneof of
 * every kind, repeated fields packed (proto3's default) and not, and maps of every key type and of scalar, enum
 * and message values, with field numbers whose tags take one to five bytes. Two more messages hold what the
 * encoder leaves to toBinary: a proto3 message with a wrapper and a Struct in fields (held by protobuf-es as a
 * bare value and a JSON object), and a proto2 message (a required field, a default, a closed enum, a group).
 *
 *   syntax = "proto3";
 *   package kit.encode.test.v1;
 *   import "google/protobuf/struct.proto";
 *   import "google/protobuf/wrappers.proto";
 *
 *   enum Color { COLOR_UNSPECIFIED = 0; COLOR_RED = 1; COLOR_BELOW = -3; COLOR_FAR = 2147483647; }
 *
 *   message Scalars {          // every scalar type, implicit presence
 *     double double = 1; float float = 2; int32 int32 = 3; int64 int64 = 4; uint32 uint32 = 5;
 *     uint64 uint64 = 6; sint32 sint32 = 7; sint64 sint64 = 8; fixed32 fixed32 = 9; fixed64 fixed64 = 10;
 *     sfixed32 sfixed32 = 11; sfixed64 sfixed64 = 12; bool bool = 13; string string = 14; bytes bytes = 15;
 *     Color color = 16;
 *     int64 int64_text = 2047 [jstype = JS_STRING]; uint64 uint64_text = 2048 [jstype = JS_STRING];
 *   }
 *   message Optionals { optional <each of the 15 scalar types> <name> = 1..15; optional Color color = 16;
 *                       Scalars scalars = 536870911; }
 *   message Lists { repeated <each of the 15 scalar types> <name> = 1..15; repeated Color color = 16;
 *                   repeated Scalars scalars = 17;
 *                   repeated int32 int32_unpacked = 18 [packed = false];
 *                   repeated double double_unpacked = 19 [packed = false];
 *                   repeated sint64 sint64_unpacked = 20 [packed = false];
 *                   repeated fixed32 fixed32_unpacked = 21 [packed = false];
 *                   repeated Color color_unpacked = 22 [packed = false]; }
 *   message Maps { map<string, string> string_string = 1; map<int32, double> int32_double = 2;
 *                  map<int64, Scalars> int64_scalars = 3; map<uint32, Color> uint32_color = 4;
 *                  map<uint64, bytes> uint64_bytes = 5; map<sint32, float> sint32_float = 6;
 *                  map<sint64, int64> sint64_int64 = 7; map<fixed32, bool> fixed32_bool = 8;
 *                  map<fixed64, string> fixed64_string = 9; map<sfixed32, sint32> sfixed32_sint32 = 10;
 *                  map<sfixed64, uint64> sfixed64_uint64 = 11; map<bool, fixed64> bool_fixed64 = 12;
 *                  map<string, Scalars> string_scalars = 13; map<int32, sfixed64> int32_sfixed64 = 14;
 *                  map<uint32, fixed32> uint32_fixed32 = 15; map<string, sfixed32> string_sfixed32 = 16;
 *                  map<string, uint32> string_uint32 = 17; map<string, sint64> string_sint64 = 18; }
 *   message Choice { oneof kind { <each of the 15 scalar types> <name> = 1..15; Color color = 16;
 *                                 Scalars scalars = 17; google.protobuf.Int32Value wrapped = 18; }
 *                    string after = 19; }
 *   message Everything { Scalars scalars = 1; Optionals optionals = 2; Lists lists = 3; Maps maps = 4;
 *                        Choice choice = 5; repeated Everything children = 6; Everything parent = 7;
 *                        map<string, Everything> named = 8; google.protobuf.Value value = 9; }
 *   message Fallback { google.protobuf.Int32Value wrapped = 1; google.protobuf.Struct struct = 2;
 *                      Scalars scalars = 3; }
 *
 *   // and, in a proto2 file (kit/encode/test/v1/legacy.proto, package kit.encode.test.v1):
 *   enum Closed { CLOSED_ONE = 1; CLOSED_TWO = 2; }
 *   message Legacy { required string id = 1; optional int32 count = 2 [default = 7];
 *                    optional Closed closed = 3; optional group Item = 4 { optional string name = 5; } }
 */
import {
  create,
  createFileRegistry,
  type DescMessage,
  type FileRegistry,
  type MessageInitShape,
} from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
  FieldOptions_JSType,
  FileDescriptorProtoSchema,
  file_google_protobuf_struct,
  file_google_protobuf_wrappers,
  type DescriptorProtoSchema,
  type FieldDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";

type FieldInit = MessageInitShape<typeof FieldDescriptorProtoSchema>;
type MessageInit = MessageInitShape<typeof DescriptorProtoSchema>;

const PACKAGE = "kit.encode.test.v1";
const ref = (name: string) => (name.startsWith("google.") ? `.${name}` : `.${PACKAGE}.${name}`);

/** The fifteen scalar types, with the field names the messages give them. */
const SCALARS: [string, Type][] = [
  ["double", Type.DOUBLE],
  ["float", Type.FLOAT],
  ["int32", Type.INT32],
  ["int64", Type.INT64],
  ["uint32", Type.UINT32],
  ["uint64", Type.UINT64],
  ["sint32", Type.SINT32],
  ["sint64", Type.SINT64],
  ["fixed32", Type.FIXED32],
  ["fixed64", Type.FIXED64],
  ["sfixed32", Type.SFIXED32],
  ["sfixed64", Type.SFIXED64],
  ["bool", Type.BOOL],
  ["string", Type.STRING],
  ["bytes", Type.BYTES],
];

function field(
  name: string,
  number: number,
  type: Type,
  o: {
    repeated?: boolean;
    typeName?: string;
    more?: Pick<FieldInit, "options" | "oneofIndex" | "proto3Optional" | "defaultValue">;
  } = {},
): FieldInit {
  return {
    name,
    number,
    type,
    label: o.repeated ? Label.REPEATED : Label.OPTIONAL,
    jsonName: name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()),
    ...(o.typeName ? { typeName: ref(o.typeName) } : {}),
    ...o.more,
  };
}

const scalarFields = (o: { repeated?: boolean; oneofIndex?: number; proto3Optional?: boolean } = {}) =>
  SCALARS.map(([name, type], i) =>
    field(name, i + 1, type, {
      repeated: o.repeated,
      more: {
        ...(o.oneofIndex !== undefined ? { oneofIndex: o.oneofIndex } : {}),
        ...(o.proto3Optional ? { proto3Optional: true } : {}),
      },
    }),
  );

/** A map field and its entry message (`<Name>Entry`, nested in the message that holds the map). */
function map(
  name: string,
  number: number,
  key: Type,
  value: Type,
  valueTypeName?: string,
): { field: FieldInit; entry: MessageInit } {
  const entryName = name.replace(/(^|_)([a-z0-9])/g, (_, _s: string, c: string) => c.toUpperCase()) + "Entry";
  return {
    field: field(name, number, Type.MESSAGE, { repeated: true, typeName: `Maps.${entryName}` }),
    entry: {
      name: entryName,
      field: [
        field("key", 1, key),
        field("value", 2, value, valueTypeName ? { typeName: valueTypeName } : {}),
      ],
      options: { mapEntry: true },
    },
  };
}

const MAPS = [
  map("string_string", 1, Type.STRING, Type.STRING),
  map("int32_double", 2, Type.INT32, Type.DOUBLE),
  map("int64_scalars", 3, Type.INT64, Type.MESSAGE, "Scalars"),
  map("uint32_color", 4, Type.UINT32, Type.ENUM, "Color"),
  map("uint64_bytes", 5, Type.UINT64, Type.BYTES),
  map("sint32_float", 6, Type.SINT32, Type.FLOAT),
  map("sint64_int64", 7, Type.SINT64, Type.INT64),
  map("fixed32_bool", 8, Type.FIXED32, Type.BOOL),
  map("fixed64_string", 9, Type.FIXED64, Type.STRING),
  map("sfixed32_sint32", 10, Type.SFIXED32, Type.SINT32),
  map("sfixed64_uint64", 11, Type.SFIXED64, Type.UINT64),
  map("bool_fixed64", 12, Type.BOOL, Type.FIXED64),
  map("string_scalars", 13, Type.STRING, Type.MESSAGE, "Scalars"),
  map("int32_sfixed64", 14, Type.INT32, Type.SFIXED64),
  map("uint32_fixed32", 15, Type.UINT32, Type.FIXED32),
  map("string_sfixed32", 16, Type.STRING, Type.SFIXED32),
  map("string_uint32", 17, Type.STRING, Type.UINT32),
  map("string_sint64", 18, Type.STRING, Type.SINT64),
];

const unpacked = { options: { packed: false } };

const messages: MessageInit[] = [
  {
    name: "Scalars",
    field: [
      ...scalarFields(),
      field("color", 16, Type.ENUM, { typeName: "Color" }),
      field("int64_text", 2047, Type.INT64, { more: { options: { jstype: FieldOptions_JSType.JS_STRING } } }),
      field("uint64_text", 2048, Type.UINT64, {
        more: { options: { jstype: FieldOptions_JSType.JS_STRING } },
      }),
    ],
  },
  {
    // proto3 `optional`: each field in a synthetic oneof of its own (`_<name>`), as protoc writes it.
    name: "Optionals",
    field: [
      ...SCALARS.map(([name, type], i) =>
        field(name, i + 1, type, { more: { proto3Optional: true, oneofIndex: i } }),
      ),
      field("color", 16, Type.ENUM, { typeName: "Color", more: { proto3Optional: true, oneofIndex: 15 } }),
      field("scalars", 536870911, Type.MESSAGE, { typeName: "Scalars" }),
    ],
    oneofDecl: [...SCALARS.map(([name]) => ({ name: `_${name}` })), { name: "_color" }],
  },
  {
    name: "Lists",
    field: [
      ...scalarFields({ repeated: true }),
      field("color", 16, Type.ENUM, { repeated: true, typeName: "Color" }),
      field("scalars", 17, Type.MESSAGE, { repeated: true, typeName: "Scalars" }),
      field("int32_unpacked", 18, Type.INT32, { repeated: true, more: unpacked }),
      field("double_unpacked", 19, Type.DOUBLE, { repeated: true, more: unpacked }),
      field("sint64_unpacked", 20, Type.SINT64, { repeated: true, more: unpacked }),
      field("fixed32_unpacked", 21, Type.FIXED32, { repeated: true, more: unpacked }),
      field("color_unpacked", 22, Type.ENUM, { repeated: true, typeName: "Color", more: unpacked }),
    ],
  },
  { name: "Maps", field: MAPS.map((m) => m.field), nestedType: MAPS.map((m) => m.entry) },
  {
    name: "Choice",
    field: [
      ...scalarFields({ oneofIndex: 0 }),
      field("color", 16, Type.ENUM, { typeName: "Color", more: { oneofIndex: 0 } }),
      field("scalars", 17, Type.MESSAGE, { typeName: "Scalars", more: { oneofIndex: 0 } }),
      // A wrapper in a oneof is held as a message (unwrapped only in a singular field outside a oneof).
      field("wrapped", 18, Type.MESSAGE, { typeName: "google.protobuf.Int32Value", more: { oneofIndex: 0 } }),
      field("after", 19, Type.STRING),
    ],
    oneofDecl: [{ name: "kind" }],
  },
  {
    name: "Everything",
    field: [
      field("scalars", 1, Type.MESSAGE, { typeName: "Scalars" }),
      field("optionals", 2, Type.MESSAGE, { typeName: "Optionals" }),
      field("lists", 3, Type.MESSAGE, { typeName: "Lists" }),
      field("maps", 4, Type.MESSAGE, { typeName: "Maps" }),
      field("choice", 5, Type.MESSAGE, { typeName: "Choice" }),
      field("children", 6, Type.MESSAGE, { repeated: true, typeName: "Everything" }),
      field("parent", 7, Type.MESSAGE, { typeName: "Everything" }),
      field("named", 8, Type.MESSAGE, { repeated: true, typeName: "Everything.NamedEntry" }),
      field("value", 9, Type.MESSAGE, { typeName: "google.protobuf.Value" }),
    ],
    nestedType: [
      {
        name: "NamedEntry",
        field: [field("key", 1, Type.STRING), field("value", 2, Type.MESSAGE, { typeName: "Everything" })],
        options: { mapEntry: true },
      },
    ],
  },
  {
    name: "Fallback",
    field: [
      field("wrapped", 1, Type.MESSAGE, { typeName: "google.protobuf.Int32Value" }),
      field("struct", 2, Type.MESSAGE, { typeName: "google.protobuf.Struct" }),
      field("scalars", 3, Type.MESSAGE, { typeName: "Scalars" }),
    ],
  },
];

const proto3 = create(FileDescriptorProtoSchema, {
  name: "kit/encode/test/v1/encode_test.proto",
  package: PACKAGE,
  syntax: "proto3",
  dependency: ["google/protobuf/struct.proto", "google/protobuf/wrappers.proto"],
  enumType: [
    {
      name: "Color",
      value: [
        { name: "COLOR_UNSPECIFIED", number: 0 },
        { name: "COLOR_RED", number: 1 },
        { name: "COLOR_BELOW", number: -3 },
        { name: "COLOR_FAR", number: 2147483647 },
      ],
    },
  ],
  messageType: messages,
});

const proto2 = create(FileDescriptorProtoSchema, {
  name: "kit/encode/test/v1/legacy.proto",
  package: PACKAGE,
  syntax: "proto2",
  enumType: [
    {
      name: "Closed",
      value: [
        { name: "CLOSED_ONE", number: 1 },
        { name: "CLOSED_TWO", number: 2 },
      ],
    },
  ],
  messageType: [
    {
      name: "Legacy",
      field: [
        { ...field("id", 1, Type.STRING), label: Label.REQUIRED },
        field("count", 2, Type.INT32, { more: { defaultValue: "7" } }),
        field("closed", 3, Type.ENUM, { typeName: "Closed" }),
        { ...field("item", 4, Type.GROUP), typeName: ref("Legacy.Item") },
      ],
      nestedType: [{ name: "Item", field: [field("name", 5, Type.STRING)] }],
    },
  ],
});

const known = [file_google_protobuf_struct, file_google_protobuf_wrappers];
const resolve = (name: string) => known.find((f) => f.name === name.replace(/\.proto$/, ""));

/** Both files' registry. */
export const encodeTestRegistry: FileRegistry = createFileRegistry(
  createFileRegistry(proto3, resolve),
  createFileRegistry(proto2, resolve),
);

function message(name: string): DescMessage {
  const m = encodeTestRegistry.getMessage(`${PACKAGE}.${name}`);
  if (!m) throw new Error(`encode test schema: no message ${name}`);
  return m;
}

/** The messages whose every field (at any depth) the encoder writes itself. */
export const handWritten = {
  Scalars: message("Scalars"),
  Optionals: message("Optionals"),
  Lists: message("Lists"),
  Maps: message("Maps"),
  Choice: message("Choice"),
  Everything: message("Everything"),
};

/** The messages the encoder leaves to toBinary. */
export const leftToToBinary = {
  Fallback: message("Fallback"),
  Legacy: message("Legacy"),
};
