// Generated message and service descriptors (protobuf-es v2), one namespace per package: the dpp.* packages
// from namespaces.generated.ts (tools/gen-registry.mjs), the vendored ones here.
export * from "./namespaces.generated";
export * as healthV1 from "./gen/grpc/health/v1/health_pb";
export * as rpcStatus from "./gen/google/rpc/status_pb";

// google.protobuf.Timestamp, the type of every instant in the messages, and its conversions.
export { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
