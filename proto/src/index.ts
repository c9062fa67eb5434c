// Generated message and service descriptors (protobuf-es v2), one namespace per package.
export * as commonV1 from "./gen/dpp/common/v1/error_pb";
export * as passportV1 from "./gen/dpp/passport/v1/passport_service_pb";
export * as eventsV1 from "./gen/dpp/events/v1/events_service_pb";
export * as healthV1 from "./gen/grpc/health/v1/health_pb";
export * as rpcStatus from "./gen/google/rpc/status_pb";

// google.protobuf.Timestamp, the type of every instant in the messages, and its conversions.
export { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
