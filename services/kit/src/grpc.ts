/**
 * The one small generic adapter between protobuf-es v2 service descriptors and
 * @grpc/grpc-js: serve a GenService with typed async handlers, call one with a
 * typed promise client. Errors travel as google.rpc.Status in the
 * grpc-status-details-bin trailer carrying dpp.common.v1.ApiError.
 */
import * as grpc from "@grpc/grpc-js";
import {
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type DescService,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { anyPack, anyUnpack } from "@bufbuild/protobuf/wkt";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import { commonV1, rpcStatus } from "@dpp/proto";
import { ApiError, isErrorCode, type ErrorCode } from "./errors";
import { contextFromMetadata, contextToMetadata, type RequestContext } from "./context";
import type { Logger } from "./logger";

const u8ToBuffer = (u8: Uint8Array) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
const DETAILS_KEY = "grpc-status-details-bin";

export function serviceDefinition(service: DescService): grpc.ServiceDefinition {
  const def: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const m of service.methods) {
    def[m.localName] = {
      path: `/${service.typeName}/${m.name}`,
      originalName: m.name,
      requestStream: m.methodKind === "client_streaming" || m.methodKind === "bidi_streaming",
      responseStream: m.methodKind === "server_streaming" || m.methodKind === "bidi_streaming",
      requestSerialize: (msg: any) => u8ToBuffer(toBinary(m.input, create(m.input, msg))),
      requestDeserialize: (buf: Buffer) => fromBinary(m.input, buf),
      responseSerialize: (msg: any) => u8ToBuffer(toBinary(m.output, create(m.output, msg))),
      responseDeserialize: (buf: Buffer) => fromBinary(m.output, buf),
    };
  }
  return def;
}

/** What a handler receives besides its request message. */
export interface CallContext {
  ctx: RequestContext;
  log: Logger;
  deadline: grpc.Deadline;
  cancelled: () => boolean;
}

type UnaryImpl<I extends DescMessage, O extends DescMessage> = (
  req: MessageShape<I>,
  call: CallContext,
) => Promise<MessageInitShape<O>> | MessageInitShape<O>;

export type ServiceImpl<T extends GenServiceMethods> = {
  [K in keyof T]: T[K]["methodKind"] extends "unary" ? UnaryImpl<T[K]["input"], T[K]["output"]> : never;
};

function grpcCodeFor(httpStatus: number): grpc.status {
  switch (httpStatus) {
    case 400:
    case 413:
    case 415:
    case 422:
      return grpc.status.INVALID_ARGUMENT;
    case 401:
      return grpc.status.UNAUTHENTICATED;
    case 402:
    case 403:
      return grpc.status.PERMISSION_DENIED;
    case 404:
      return grpc.status.NOT_FOUND;
    case 409:
      return grpc.status.ABORTED;
    case 412:
      return grpc.status.FAILED_PRECONDITION;
    case 429:
      return grpc.status.RESOURCE_EXHAUSTED;
    case 502:
    case 503:
      return grpc.status.UNAVAILABLE;
    default:
      return httpStatus < 300 ? grpc.status.FAILED_PRECONDITION : grpc.status.INTERNAL;
  }
}

/** Turns any thrown value into a grpc-js ServiceError with the ApiError packed in. */
export function toServiceError(err: unknown, log?: Logger): Partial<grpc.ServiceError> {
  let apiErr: ApiError;
  if (err instanceof ApiError) {
    apiErr = err;
  } else {
    log?.error({ err }, "unhandled error in rpc handler");
    apiErr = new ApiError("internal_error");
  }
  const code = grpcCodeFor(apiErr.status);
  const status = create(rpcStatus.StatusSchema, {
    code,
    message: apiErr.message,
    details: [
      anyPack(
        commonV1.ApiErrorSchema,
        create(commonV1.ApiErrorSchema, {
          code: apiErr.code,
          httpStatus: apiErr.status,
          message: apiErr.message,
          detailsJson: JSON.stringify({ ...apiErr.details, ...headerDetails(apiErr) }),
        }),
      ),
    ],
  });
  const metadata = new grpc.Metadata();
  metadata.set(DETAILS_KEY, u8ToBuffer(toBinary(rpcStatus.StatusSchema, status)));
  return { code, details: apiErr.message, metadata };
}

// Response headers ride along in details under a reserved key and are lifted out again by the client.
const HEADERS_KEY = "__headers";
function headerDetails(err: ApiError): Record<string, unknown> {
  return Object.keys(err.headers).length ? { [HEADERS_KEY]: err.headers } : {};
}

/** Decodes a failed call back into an ApiError; transport failures become internal_error. */
export function fromServiceError(err: grpc.ServiceError, target: string): ApiError {
  const raw = err.metadata?.get(DETAILS_KEY)[0];
  if (raw instanceof Buffer) {
    try {
      const status = fromBinary(rpcStatus.StatusSchema, raw);
      for (const any of status.details) {
        const e = anyUnpack(any, commonV1.ApiErrorSchema);
        if (e && isErrorCode(e.code)) {
          const details = e.detailsJson ? (JSON.parse(e.detailsJson) as Record<string, unknown>) : {};
          const headers = (details[HEADERS_KEY] as Record<string, string> | undefined) ?? {};
          delete details[HEADERS_KEY];
          return new ApiError(e.code as ErrorCode, e.message, details, headers);
        }
      }
    } catch {
      // fall through: an undecodable trailer is treated as an internal error
    }
  }
  if (err.code === grpc.status.UNAVAILABLE) {
    return new ApiError(
      "internal_error",
      "A service needed for this request is unavailable; retry shortly.",
      { reason: "upstream_unavailable", service: target },
      { "Retry-After": "1" },
    );
  }
  if (err.code === grpc.status.DEADLINE_EXCEEDED) {
    return new ApiError(
      "internal_error",
      "A service needed for this request did not answer in time; retry shortly.",
      { reason: "upstream_timeout", service: target },
      { "Retry-After": "1" },
    );
  }
  return new ApiError("internal_error", undefined, { reason: "upstream_error", service: target });
}

export function addService<T extends GenServiceMethods>(
  server: grpc.Server,
  service: GenService<T>,
  impl: ServiceImpl<T>,
  log: Logger,
): void {
  const desc = service as unknown as DescService;
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const m of desc.methods) {
    const fn = (impl as Record<string, UnaryImpl<DescMessage, DescMessage>>)[m.localName];
    if (!fn) throw new Error(`${desc.typeName}.${m.name} has no implementation`);
    handlers[m.localName] = (call: grpc.ServerUnaryCall<any, any>, cb: grpc.sendUnaryData<any>) => {
      const ctx = contextFromMetadata(call.metadata);
      const callLog = log.child({ request_id: ctx.requestId, rpc: m.name });
      Promise.resolve()
        .then(() =>
          fn(call.request, {
            ctx,
            log: callLog,
            deadline: call.getDeadline(),
            cancelled: () => call.cancelled,
          }),
        )
        .then((res) => cb(null, create(m.output, res as MessageInitShape<DescMessage>)))
        .catch((err: unknown) => cb(toServiceError(err, callLog), null));
    };
  }
  server.addService(serviceDefinition(desc), handlers);
}

export interface CallOptions {
  context: RequestContext;
  deadlineMs?: number;
}

export type PromiseClient<T extends GenServiceMethods> = {
  [K in keyof T]: T[K]["methodKind"] extends "unary"
    ? (req: MessageInitShape<T[K]["input"]>, opts: CallOptions) => Promise<MessageShape<T[K]["output"]>>
    : never;
};

export interface ClientOptions {
  /** Default deadline of every call. */
  deadlineMs?: number;
  /** Name used in error details (e.g. "passport"). */
  target?: string;
  channelOptions?: grpc.ChannelOptions;
}

/** A typed promise client; every call carries the request context and a deadline. */
export function createClient<T extends GenServiceMethods>(
  service: GenService<T>,
  address: string,
  options: ClientOptions = {},
): PromiseClient<T> & { close(): void } {
  const desc = service as unknown as DescService;
  const Ctor = grpc.makeGenericClientConstructor(serviceDefinition(desc), desc.typeName);
  const raw = new Ctor(address, grpc.credentials.createInsecure(), {
    "grpc.keepalive_time_ms": 30000,
    // Reconnect quickly after a restarted service comes back (default backoff grows to 120 s).
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 1000,
    "grpc.max_receive_message_length": 16 * 1024 * 1024,
    ...options.channelOptions,
  }) as unknown as Record<string, (...args: unknown[]) => void> & { close(): void };
  const target = options.target ?? desc.typeName;
  const out: Record<string, unknown> = { close: () => raw.close() };
  for (const m of desc.methods) {
    out[m.localName] = (req: unknown, o: CallOptions) =>
      new Promise((resolve, reject) => {
        const deadline = Date.now() + (o.deadlineMs ?? options.deadlineMs ?? 5000);
        raw[m.localName]!(
          req,
          contextToMetadata(o.context),
          { deadline },
          (e: grpc.ServiceError | null, r: unknown) => (e ? reject(fromServiceError(e, target)) : resolve(r)),
        );
      });
  }
  return out as PromiseClient<T> & { close(): void };
}

/** The promise client type of a generated service, e.g. ClientOf<typeof PassportService>. */
export type ClientOf<S> = S extends GenService<infer T> ? PromiseClient<T> & { close(): void } : never;

/** The handler map type of a generated service, e.g. ImplOf<typeof PassportService>. */
export type ImplOf<S> = S extends GenService<infer T> ? ServiceImpl<T> : never;
