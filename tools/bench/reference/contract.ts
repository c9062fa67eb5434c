/**
 * The reference stack's one gRPC service. Messages are JSON text in the gRPC frame (a hand-written codec, no
 * generated code): the passport document is JSON text inside the real services' protobuf messages too (the
 * free-form `data` field travels as a JSON string), so the bulk of the bytes is encoded the same way, and the
 * reference needs no .proto of its own in proto/.
 */
import type * as grpc from "@grpc/grpc-js";

export interface ItemKey {
  org: string;
  livemode: boolean;
  id: string;
}
export interface PageQuery {
  org: string;
  livemode: boolean;
  limit: number;
  cursor?: string;
}
export interface CreateInput {
  org: string;
  livemode: boolean;
  body: { category: string; external_id?: string; data?: Record<string, unknown> };
}
export interface PatchInput extends ItemKey {
  data: Record<string, unknown>;
}
export interface VariantsInput {
  org: string;
  livemode: boolean;
  passport: string;
  variants: { gtin: string; size?: string; colour?: string }[];
}
export interface RemovalInput {
  org: string;
  livemode: boolean;
  passport: string;
  gtins: string[];
}
/** Every answer: the JSON document the edge sends, or a refusal (HTTP status and code). */
export interface Reply {
  status: number;
  json: string;
}

const json = {
  requestSerialize: (v: unknown) => Buffer.from(JSON.stringify(v)),
  requestDeserialize: (b: Buffer) => JSON.parse(b.toString()) as unknown,
  responseSerialize: (v: unknown) => Buffer.from(JSON.stringify(v)),
  responseDeserialize: (b: Buffer) => JSON.parse(b.toString()) as unknown,
};
const unary = (name: string) => ({
  path: `/bench.reference.Items/${name}`,
  requestStream: false,
  responseStream: false,
  ...json,
});

export const ITEMS_SERVICE = {
  Get: unary("Get"),
  List: unary("List"),
  Feed: unary("Feed"),
  Create: unary("Create"),
  Patch: unary("Patch"),
  Publish: unary("Publish"),
  CreateVariants: unary("CreateVariants"),
  RemoveVariants: unary("RemoveVariants"),
} satisfies grpc.ServiceDefinition;

export type Method = keyof typeof ITEMS_SERVICE;
