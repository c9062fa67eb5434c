/**
 * The one small generic adapter between protobuf-es v2 service descriptors and
 * @grpc/grpc-js: serve a GenService with typed async handlers, call one with a
 * typed promise client. Errors travel as google.rpc.Status in the
 * grpc-status-details-bin trailer carrying dpp.common.v1.ApiError (its response
 * headers, e.g. Retry-After, in the declared `headers` field). Every call
 * of a served service must carry a signed context token (internal-auth.ts): the
 * client signs, the server verifies before the handler runs.
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
import { anyPack, anyUnpack, MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import { commonV1, healthV1, rpcStatus } from "@dpp/proto";
import { ApiError, boundError, isErrorCode, type ErrorCode } from "@dpp/contract";
import type { Kysely } from "kysely";
import { requireTenant, type CallContext, type RequestContext } from "./context";
import { runIdempotent } from "./idempotency";
import { failureAfterEffects } from "./effects";
import { checkClientCall, keyedCallChecks } from "./keyed-work";
import { databaseUnavailable, isDatabaseUnavailable } from "./db";
import {
  CONTEXT_METADATA_KEY,
  IDEMPOTENCY_FINGERPRINT_METADATA_KEY,
  IDEMPOTENCY_KEY_METADATA_KEY,
  REQUEST_ID_METADATA_KEY,
  type ContextSigner,
  type ContextVerifier,
  type RejectionReason,
  type Verification,
} from "./internal-auth";
import type { Logger } from "./logger";
import type { ServiceMetrics } from "./metrics";
import { useFastUtf8Encoding } from "./wire";
import { decodeMessage } from "./decode";
import { encodeMessage } from "./encode";
import {
  DEADLINE_GRACE_MS,
  DeadlineExceeded,
  deadlineRefusal,
  isLockTimeout,
  isStatementTimeout,
  lockWaitRefusal,
  outcomeUnknown,
  setCallDeadline,
} from "./deadline";

// Messages are written by encodeMessage (encode.ts) and read by decodeMessage (decode.ts); a schema the encoder
// leaves to toBinary writes its strings through Buffer.from (wire.ts), as does the error trailer.
useFastUtf8Encoding();

const u8ToBuffer = (u8: Uint8Array) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
const DETAILS_KEY = "grpc-status-details-bin";

/**
 * The largest encoded google.rpc.Status sent in the grpc-status-details-bin trailer; a larger one travels as the
 * call's message, before the trailers (docs/decisions/0046). A trailer is an HTTP/2 header: the peer's HPACK
 * decoder (nghttp2) refuses one header field over 64 KiB, and a header block over 8 CONTINUATION frames, as an
 * error of the whole connection, failing or stalling every call on it. 8 KiB (10,924 characters in base64) is
 * gRPC's usual metadata bound, far below both.
 */
export const DETAILS_TRAILER_MAX_BYTES = 8 * 1024;

/**
 * The first byte of a message that carries a refusal's google.rpc.Status rather than an answer. No encoded
 * message opens with it (it would be field number 0, which protobuf does not allow; an empty message has no
 * bytes), so a client tells the two apart by that byte alone.
 */
const DETAILS_MESSAGE_MARK = 0x00;

/** A refusal as the server sends it: status and trailers, and its details as a message when too large for them. */
export type ServiceRefusal = Partial<grpc.ServiceError> & {
  /** The encoded google.rpc.Status after DETAILS_MESSAGE_MARK, sent as the call's message before the trailers. */
  detailsMessage?: Buffer;
};

export function serviceDefinition(service: DescService): grpc.ServiceDefinition {
  const def: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const m of service.methods) {
    def[m.localName] = {
      path: `/${service.typeName}/${m.name}`,
      originalName: m.name,
      requestStream: m.methodKind === "client_streaming" || m.methodKind === "bidi_streaming",
      responseStream: m.methodKind === "server_streaming" || m.methodKind === "bidi_streaming",
      requestSerialize: (msg: any) => encodeMessage(m.input, msg),
      requestDeserialize: (buf: Buffer) => decodeMessage(m.input, buf),
      // An answer already encoded (a keyed call's, as recorded) is sent as it is.
      responseSerialize: (msg: any) =>
        msg instanceof Uint8Array ? u8ToBuffer(msg) : encodeMessage(m.output, msg),
      responseDeserialize: (buf: Buffer) => decodeMessage(m.output, buf),
    };
  }
  return def;
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

/**
 * Turns any thrown value into a grpc-js ServiceError with the ApiError packed in, bounded (boundError: every
 * service's refusals pass here). The gRPC status follows the error's HTTP status unless `code` names one. The
 * packed google.rpc.Status travels in the grpc-status-details-bin trailer up to DETAILS_TRAILER_MAX_BYTES; a
 * larger one is `detailsMessage`, sent before the trailers (sendRefusal), and the trailer then carries the same
 * error without its details.
 */
export function toServiceError(err: unknown, log?: Logger, code?: grpc.status): ServiceRefusal {
  let apiErr: ApiError;
  if (err instanceof ApiError) {
    apiErr = boundError(err);
  } else if (err instanceof DeadlineExceeded || isStatementTimeout(err)) {
    log?.warn("the call's deadline passed before its work committed; rolled back");
    apiErr = deadlineRefusal();
  } else if (isLockTimeout(err)) {
    log?.warn("a lock wait reached the call's deadline; rolled back");
    apiErr = lockWaitRefusal();
  } else if (isDatabaseUnavailable(err)) {
    log?.warn({ err: { message: (err as Error).message } }, "database unavailable");
    apiErr = databaseUnavailable();
  } else {
    log?.error({ err }, "unhandled error in rpc handler");
    apiErr = new ApiError("internal_error");
  }
  code ??= grpcCodeFor(apiErr.status);
  const encoded = encodeStatus(code, apiErr, JSON.stringify(apiErr.details));
  const metadata = new grpc.Metadata();
  if (encoded.byteLength <= DETAILS_TRAILER_MAX_BYTES) {
    metadata.set(DETAILS_KEY, u8ToBuffer(encoded));
    return { code, details: apiErr.message, metadata };
  }
  metadata.set(DETAILS_KEY, u8ToBuffer(encodeStatus(code, apiErr, "{}")));
  const detailsMessage = Buffer.allocUnsafe(encoded.byteLength + 1);
  detailsMessage[0] = DETAILS_MESSAGE_MARK;
  detailsMessage.set(encoded, 1);
  return { code, details: apiErr.message, metadata, detailsMessage };
}

function encodeStatus(code: grpc.status, apiErr: ApiError, detailsJson: string): Uint8Array {
  const status = create(rpcStatus.StatusSchema, {
    code,
    message: apiErr.message,
    details: [
      anyPack(
        commonV1.ApiErrorSchema,
        create(commonV1.ApiErrorSchema, {
          code: apiErr.code,
          message: apiErr.message,
          detailsJson,
          headers: apiErr.headers,
          replayedRequestId: apiErr.replayedRequestId ?? "",
        }),
      ),
    ],
  });
  return toBinary(rpcStatus.StatusSchema, status);
}

/**
 * Answers a unary call with `refusal`: its detailsMessage first, when it has one, as the call's message (the
 * handler's call is a writable stream of answers in grpc-js), then the status and trailers.
 */
function sendRefusal(call: object, cb: grpc.sendUnaryData<unknown>, refusal: ServiceRefusal): void {
  const { detailsMessage, ...error } = refusal;
  const stream = call as { write?: (message: Buffer) => unknown };
  if (detailsMessage && typeof stream.write === "function") stream.write(detailsMessage);
  cb(error, null);
}

/** details.reason of the error a service answers to a call that does not prove its caller. */
const CALLER_NOT_AUTHENTICATED = "caller_not_authenticated";

/**
 * The refusal of a call without a valid context token: UNAUTHENTICATED with
 * configuration_error packed in. From where the service stands, a call it cannot
 * authenticate is a platform fault (keys, names or clocks), never an API client's.
 */
export function callerNotAuthenticated(reason: RejectionReason): Partial<grpc.ServiceError> {
  return toServiceError(
    new ApiError("configuration_error", "The call does not prove which trusted service sent it.", {
      reason: CALLER_NOT_AUTHENTICATED,
      check: reason,
    }),
    undefined,
    grpc.status.UNAUTHENTICATED,
  );
}

function decodeApiError(err: grpc.ServiceError): ApiError | undefined {
  const raw = err.metadata?.get(DETAILS_KEY)[0];
  if (!(raw instanceof Buffer)) return undefined;
  try {
    const status = fromBinary(rpcStatus.StatusSchema, raw);
    for (const any of status.details) {
      const e = anyUnpack(any, commonV1.ApiErrorSchema);
      if (e && isErrorCode(e.code)) {
        const details = e.detailsJson ? (JSON.parse(e.detailsJson) as Record<string, unknown>) : {};
        const apiErr = new ApiError(e.code as ErrorCode, e.message, details, { ...e.headers });
        if (e.replayedRequestId) apiErr.replayedRequestId = e.replayedRequestId;
        return apiErr;
      }
    }
  } catch {
    // an undecodable trailer is treated as an internal error
  }
  return undefined;
}

/**
 * Decodes a failed call back into an ApiError; transport failures become
 * internal_error. A service that refused this process's call as UNAUTHENTICATED
 * means the platform is misconfigured (keys, service names, clocks), never the
 * API client's fault: it becomes internal_error with details.reason
 * "upstream_rejected_caller", and the service's own reason is logged, not shown.
 */
export function fromServiceError(err: grpc.ServiceError, target: string, log?: Logger): ApiError {
  const apiErr = decodeApiError(err);
  if (
    err.code === grpc.status.UNAUTHENTICATED &&
    (!apiErr || apiErr.details.reason === CALLER_NOT_AUTHENTICATED)
  ) {
    log?.error(
      { service: target, check: apiErr?.details.check ?? null, grpc_message: err.details },
      "a service refused this process's call as unauthenticated: check INTERNAL_AUTH_PRIVATE_KEY, the service's INTERNAL_AUTH_TRUSTED_KEYS, the audience name and the clocks",
    );
    return new ApiError("internal_error", undefined, { reason: "upstream_rejected_caller", service: target });
  }
  if (apiErr) {
    // The service's own timeout says which service it was from here.
    if (apiErr.details.reason === "upstream_timeout" && apiErr.details.service === undefined)
      return new ApiError(
        apiErr.code,
        apiErr.message,
        { ...apiErr.details, service: target },
        apiErr.headers,
      );
    return apiErr;
  }
  // The service never answered within the deadline and its grace, or the connection dropped while the call was in
  // flight: it may have committed (deadline.ts).
  if (err.code === grpc.status.DEADLINE_EXCEEDED || droppedInFlight(err)) return outcomeUnknown(target);
  if (err.code === grpc.status.UNAVAILABLE) {
    return new ApiError(
      "internal_error",
      "A service needed for this request is unavailable; retry shortly.",
      { reason: "upstream_unavailable", service: target },
      { "Retry-After": "1" },
    );
  }
  return new ApiError("internal_error", undefined, { reason: "upstream_error", service: target });
}

/**
 * grpc-js' UNAVAILABLE of a call whose connection was lost after the call was sent (as opposed to one that found
 * no connection, "No connection established", or was refused before it started).
 */
function droppedInFlight(err: grpc.ServiceError): boolean {
  return (
    err.code === grpc.status.UNAVAILABLE &&
    (err.details === "Connection dropped" || /ECONNRESET|ETIMEDOUT|^Write error/.test(err.details))
  );
}

/** The one value of a metadata entry; undefined when it is absent, sent twice or not text. */
function single(md: grpc.Metadata, key: string): string | undefined {
  const values = md.get(key);
  return values.length === 1 && typeof values[0] === "string" ? values[0] : undefined;
}

function verifyCall(verifier: ContextVerifier, md: grpc.Metadata, path: string): Verification {
  const tokens = md.get(CONTEXT_METADATA_KEY);
  if (tokens.length > 1) return { ok: false, reason: "malformed" };
  const token = tokens[0];
  // A call without an Idempotency-Key carries neither entry; one with either carries both (or is refused).
  const keyed =
    md.get(IDEMPOTENCY_KEY_METADATA_KEY).length > 0 ||
    md.get(IDEMPOTENCY_FINGERPRINT_METADATA_KEY).length > 0;
  return verifier.verify(
    typeof token === "string" ? token : undefined,
    path,
    single(md, REQUEST_ID_METADATA_KEY),
    keyed
      ? {
          key: single(md, IDEMPOTENCY_KEY_METADATA_KEY),
          fingerprint: single(md, IDEMPOTENCY_FINGERPRINT_METADATA_KEY),
        }
      : undefined,
  );
}

/**
 * Serves `service` on `server`. Every call must carry a context token that
 * `verifier` accepts; any other call is answered UNAUTHENTICATED (logged with its
 * reason) and its handler never runs.
 */
export function addService<T extends GenServiceMethods>(
  server: grpc.Server,
  service: GenService<T>,
  impl: ServiceImpl<T>,
  log: Logger,
  verifier: ContextVerifier,
  options: AddServiceOptions = {},
): void {
  const desc = service as unknown as DescService;
  const handlers: grpc.UntypedServiceImplementation = {};
  const idem = options.idempotency;
  const idemObserve = options.metrics ? options.metrics.idempotency.bind(options.metrics) : undefined;
  // A keyed answer's bytes, by its message, as written to its record or read from it (see responseSerialize).
  const encodedAs = new WeakMap<object, Uint8Array>();
  for (const m of desc.methods) {
    const fn = (impl as Record<string, UnaryImpl<DescMessage, DescMessage>>)[m.localName];
    if (!fn) throw new Error(`${desc.typeName}.${m.name} has no implementation`);
    const path = `/${desc.typeName}/${m.name}`;
    const observed = options.metrics?.grpcServerMethod(m.name);
    handlers[m.localName] = (call: grpc.ServerUnaryCall<any, any>, answer: grpc.sendUnaryData<any>) => {
      // With metrics, the answer records its status code and the call's time (dpp_grpc_server_*).
      let cb = answer;
      if (observed) {
        const started = performance.now();
        cb = (err, value, trailer, flags) => {
          observed.done(
            err ? (err.code ?? grpc.status.UNKNOWN) : grpc.status.OK,
            (performance.now() - started) / 1000,
          );
          answer(err, value, trailer, flags);
        };
      }
      const verified = verifyCall(verifier, call.metadata, path);
      if (!verified.ok) {
        log.warn(
          {
            rpc: m.name,
            check: verified.reason,
            claimed_issuer: verified.claimedIssuer,
            peer: call.getPeer(),
          },
          "refused a call that does not prove its caller",
        );
        cb(callerNotAuthenticated(verified.reason), null);
        return;
      }
      const { ctx, caller } = verified;
      // The call's logger is made when something is logged: most calls log nothing.
      let callLog: Logger | undefined;
      const logOf = () => (callLog ??= log.child({ request_id: ctx.requestId, rpc: m.name, caller }));
      // One line per call at debug: which replica served which call (test-e2e/scale-out.e2e.test.ts counts them).
      if (log.isLevelEnabled("debug")) logOf().debug("call");
      // The work deadline: the caller waits DEADLINE_GRACE_MS past it for the answer (deadline.ts).
      const deadline = workDeadline(call.getDeadline(), call.metadata);
      // Work whose deadline passed is not started: its caller is told that nothing was applied.
      if (call.cancelled || Date.now() >= deadline) {
        logOf().warn("deadline passed before the call started; not started");
        cb(toServiceError(deadlineRefusal(), undefined, grpc.status.DEADLINE_EXCEEDED), null);
        return;
      }
      if (deadline !== Infinity) setCallDeadline(ctx, deadline);
      const callContext: CallContext = {
        ctx,
        caller,
        get log() {
          return logOf();
        },
        deadline,
        cancelled: () => call.cancelled,
      };
      // A handler may throw synchronously: the async function turns it into a refusal like any other.
      const run = async () =>
        create(m.output, (await fn(call.request, callContext)) as MessageInitShape<DescMessage>);
      const preflight = options.preflight?.[m.localName];
      // A 5xx after an effect of `once` ran is not "nothing was applied" (effects.ts).
      const fail = (err: unknown) =>
        sendRefusal(call, cb, toServiceError(failureAfterEffects(ctx, err, logOf), logOf()));
      if (preflight)
        try {
          preflight(call.request, callContext);
        } catch (err) {
          sendRefusal(call, cb, toServiceError(err, logOf()));
          return;
        }
      if (idem && ctx.idempotency) {
        runIdempotent(
          {
            db: idem.db,
            ctx: requireTenant(ctx),
            method: path,
            encode: (r) => {
              const bytes = encodeMessage(m.output, r);
              encodedAs.set(r, bytes);
              return bytes;
            },
            decode: (b) => {
              const r = decodeMessage<any>(m.output, b);
              encodedAs.set(r, b);
              return r;
            },
            onCommitted: idem.onCommitted,
            openWithWork: idem.openWithWork,
            observe: idemObserve,
          },
          run,
        )
          .then(({ response, replayed }) => {
            if (replayed) {
              const md = new grpc.Metadata();
              md.set(REPLAYED_METADATA_KEY, "true");
              call.sendMetadata(md);
            }
            // Encoded once: the bytes the record holds are the answer's.
            cb(null, encodedAs.get(response) ?? response);
          })
          .catch(fail);
      } else if (ctx.idempotency) {
        // Keys fail closed: a service that does not declare idempotency cannot run a keyed call once per key.
        logOf().error(
          { service: desc.typeName, method: m.name },
          "refused a call with an Idempotency-Key: this service does not declare idempotency",
        );
        fail(keyNotHonoured(desc.typeName, m.name));
      } else {
        run()
          .then((response) => cb(null, response))
          .catch(fail);
      }
    };
  }
  server.addService(serviceDefinition(desc), handlers);
}

/**
 * The refusal of a call that carries an Idempotency-Key to a service that does not declare idempotency: run
 * unguarded, a retry under the key would run it again. Nothing runs, nothing is recorded.
 */
function keyNotHonoured(service: string, method: string): ApiError {
  return new ApiError(
    "configuration_error",
    `${service}/${method} does not honour Idempotency-Keys (its service does not declare idempotency); nothing was done.`,
    { reason: "idempotency_not_declared", service, method },
  );
}

export interface AddServiceOptions {
  /**
   * Calls whose context carries an Idempotency-Key run once per key, their result recorded in the same
   * transaction as their writes (idempotency.ts), on this database (the service's own schema). Without it, such
   * calls are refused (`keyNotHonoured`).
   */
  idempotency?: { db: Kysely<any>; onCommitted?: () => void; openWithWork?: boolean };
  /**
   * Checks of a method's request that run before its Idempotency-Key is claimed (by method's local name): a
   * refusal they throw is answered and never recorded, so the client corrects the request and sends it again
   * under the same key (the spec's "correctable refusals in the preliminary check do not consume the key").
   * Pure checks of the request only: no database, no other service.
   */
  preflight?: Record<string, (request: any, call: CallContext) => void>;
  /** The service's metrics: each call's code and time, each keyed call's outcome (metrics.ts). */
  metrics?: ServiceMetrics;
}

/** Initial metadata of an answer that replays the result recorded under the call's Idempotency-Key. */
export const REPLAYED_METADATA_KEY = "x-dpp-idempotent-replayed";

/**
 * The metadata entry of a call's work deadline, in ms since the epoch. gRPC's own deadline travels as a duration
 * that the server counts from when it reads the call: a call that waited in a stalled process's socket would get
 * its whole duration again when the process resumes. The instant does not move (clocks are kept in step, as the
 * context tokens' expiry already requires).
 */
export const WORK_DEADLINE_METADATA_KEY = "x-dpp-work-deadline";

/**
 * The work deadline of a call: the instant its caller named, and never later than its gRPC deadline less the
 * caller's grace (Infinity: no deadline).
 */
function workDeadline(deadline: grpc.Deadline, md: grpc.Metadata): number {
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  const fromGrpc = Number.isFinite(at) ? at - DEADLINE_GRACE_MS : Infinity;
  const named = Number(single(md, WORK_DEADLINE_METADATA_KEY));
  return Number.isFinite(named) && named > 0 ? Math.min(named, fromGrpc) : fromGrpc;
}

export interface CallOptions {
  /** The request context, signed into the call; `outcome` is filled from the answer. */
  context: RequestContext;
  /** The service's work deadline, from now; the call waits DEADLINE_GRACE_MS more for its answer. */
  deadlineMs?: number;
}

export type PromiseClient<T extends GenServiceMethods> = {
  [K in keyof T]: T[K]["methodKind"] extends "unary"
    ? (req: MessageInitShape<T[K]["input"]>, opts: CallOptions) => Promise<MessageShape<T[K]["output"]>>
    : never;
};

export interface ClientOptions {
  /** This process's identity: signs every call's context. */
  signer: ContextSigner;
  /** The target service's name (e.g. "passport"): the tokens' audience, also named in error details. */
  audience: string;
  /** Default work deadline of every call (CallOptions.deadlineMs). */
  deadlineMs?: number;
  channelOptions?: grpc.ChannelOptions;
  /** Where a refusal of this process's calls (misconfigured internal auth) is logged. */
  log?: Logger;
  /** The calling service's metrics: each call's status code (dpp_grpc_client_handled_total). */
  metrics?: ServiceMetrics;
  /** How calls that are safe to repeat are sent again when the service is unavailable (safeToRepeat). */
  retry?: Partial<CallRetry>;
}

/** The retry of a call that is safe to repeat (docs/decisions/0061-grpc-load-balancing.md). */
export interface CallRetry {
  /** Sends in all, the first included (GRPC_RETRY_MAX_ATTEMPTS); 1: never sent again. */
  maxAttempts: number;
  /** The wait before the second send, doubled before each next, with jitter (GRPC_RETRY_BACKOFF_MS). */
  backoffMs: number;
}

export const CALL_RETRY_DEFAULTS: CallRetry = { maxAttempts: 3, backoffMs: 25 };

/**
 * Whether every call of `method` is safe to send again: its proto declares `option idempotency_level =
 * NO_SIDE_EFFECTS` (a read) or `IDEMPOTENT` (a repeat changes nothing more than the first did). A write without
 * either is sent again only under an Idempotency-Key. Every method named like a read (Get, List, Find, Read,
 * Check) must declare one and only such methods may declare NO_SIDE_EFFECTS (retry-rule.test.ts checks every
 * service), so a new method cannot be left out, or let in, by mistake.
 */
export function safeToRepeat(method: { idempotency: MethodOptions_IdempotencyLevel }): boolean {
  return (
    method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS ||
    method.idempotency === MethodOptions_IdempotencyLevel.IDEMPOTENT
  );
}

/**
 * How long to wait before sending a call again after `err` (its attempt `n`), or undefined when `err` is not a
 * failure to reach the service: only UNAVAILABLE without the service's own refusal in the trailers (a connection
 * refused, reset or dropped, a replica going away) is retried; a service's answer, even a 503 one such as
 * storage_unavailable, is the caller's to see. Round-robin sends the next attempt to the next replica.
 */
function retryDelay(err: grpc.ServiceError, n: number, backoffMs: number): number | undefined {
  if (err.code !== grpc.status.UNAVAILABLE || decodeApiError(err) !== undefined) return undefined;
  const base = backoffMs * 2 ** (n - 1);
  return Math.round(base / 2 + Math.random() * (base / 2));
}

type RawClient = Record<string, (...args: unknown[]) => void> & { close(): void };

type UnaryCallback = (err: grpc.ServiceError | null, res?: unknown) => void;

/**
 * A unary method of `client` that takes a refusal's details sent as its message (sendRefusal) into the error's
 * trailers, where a refusal's details are read (decodeApiError): a message that opens with DETAILS_MESSAGE_MARK
 * is never given to the method's deserializer.
 */
function unaryWithDetailsMessage(client: grpc.Client, method: grpc.MethodDefinition<unknown, unknown>) {
  const { path, requestSerialize, responseDeserialize } = method;
  return (req: unknown, md: grpc.Metadata, options: grpc.CallOptions, callback: UnaryCallback) => {
    let details: Buffer | undefined;
    return client.makeUnaryRequest(
      path,
      requestSerialize,
      (buf: Buffer) => {
        if (buf.length === 0 || buf[0] !== DETAILS_MESSAGE_MARK) return responseDeserialize(buf);
        details = buf.subarray(1);
        return undefined;
      },
      req,
      md,
      options,
      (err: grpc.ServiceError | null, res?: unknown) => {
        if (details === undefined) callback(err, res);
        else if (err) {
          err.metadata.set(DETAILS_KEY, details);
          callback(err);
        } else
          callback(
            Object.assign(new Error("A refusal's details came with a successful status."), {
              code: grpc.status.INTERNAL,
              details: "A refusal's details came with a successful status.",
              metadata: new grpc.Metadata(),
            }),
          );
      },
    );
  };
}

/**
 * The gRPC target of an address setting (config.ts `address`): a plain `host:port` becomes `dns:///host:port`, whose
 * every address is used and which is resolved again when a connection closes (a pod gone, a connection aged out
 * by its server: `GRPC_MAX_CONNECTION_AGE_MS`); a target with a scheme (`dns:`, `ipv4:`, `ipv6:`, `unix:`, or
 * any `scheme://`) is used as it is.
 */
export function grpcTarget(address: string): string {
  return /^(dns|ipv4|ipv6|unix|unix-abstract):|^[a-z][a-z0-9+.-]*:\/\//i.test(address)
    ? address
    : `dns:///${address}`;
}

/**
 * Calls are spread round-robin over every address of the target, each a connection of its own: with one
 * connection (pick_first, gRPC's default) every call of a caller reaches one replica however many there are
 * (docs/decisions/0061-grpc-load-balancing.md).
 */
export const ROUND_ROBIN_SERVICE_CONFIG = JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] });

/** How often, at most, a DNS target is resolved again (grpc-js waits 30 s by default). */
export const DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS_DEFAULT = 5000;

/** The channel options of a client's balancing: round-robin, and how soon a DNS name may be resolved again. */
export function balancingChannelOptions(
  o: { dnsMinTimeBetweenResolutionsMs?: number } = {},
): grpc.ChannelOptions {
  return {
    "grpc.service_config": ROUND_ROBIN_SERVICE_CONFIG,
    // The balancing is the kit's: a service config published in DNS TXT records is not looked up.
    "grpc.service_config_disable_resolution": 1,
    "grpc.dns_min_time_between_resolutions_ms":
      o.dnsMinTimeBetweenResolutionsMs ?? DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS_DEFAULT,
  };
}

/**
 * One IP address and port (a one-replica local stack, a test): nothing to balance and no name to resolve again. It
 * keeps gRPC's default, pick_first, whose connection, once the service went away, is made again by the next call
 * (which waits for it) rather than retried in the background: round-robin would be backing off from a restarted
 * service's port for up to `grpc.max_reconnect_backoff_ms` and fail the calls meanwhile.
 */
const SINGLE_IP_ADDRESS = /^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-f:.]+\]):\d+$/i;

function rawClient(desc: DescService, address: string, channelOptions?: grpc.ChannelOptions): RawClient {
  const definition = serviceDefinition(desc);
  const Ctor = grpc.makeGenericClientConstructor(definition, desc.typeName);
  const single = SINGLE_IP_ADDRESS.test(address);
  const options: grpc.ChannelOptions = {
    ...balancingChannelOptions(),
    "grpc.keepalive_time_ms": 30000,
    // Reconnect quickly after a restarted service comes back (default backoff grows to 120 s).
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 1000,
    "grpc.max_receive_message_length": 16 * 1024 * 1024,
    // A 1 MiB HTTP/2 receive window, connection and streams (default 64 KiB): 16 feed pages of about 50 KB in
    // flight on one connection otherwise wait on window updates. tools/bench/src/grpc-payload.ts: a 50 KB answer
    // 0.42-0.53 → 0.32-0.41 ms of CPU per call (both sides), 1 KB answers unchanged; docs/performance.md.
    "grpc-node.flow_control_window": 1024 * 1024,
    ...channelOptions,
  };
  if (single) delete options["grpc.service_config"];
  const client = new Ctor(
    single ? address : grpcTarget(address),
    grpc.credentials.createInsecure(),
    options,
  ) as unknown as RawClient;
  for (const [name, method] of Object.entries(definition))
    if (!method.requestStream && !method.responseStream)
      client[name] = unaryWithDetailsMessage(client as unknown as grpc.Client, method) as RawClient[string];
  return client;
}

/**
 * Starts a call without the stack trace grpc-js records of every call's caller (`new Error()` in
 * makeUnaryRequest, about as costly as the rest of starting the call): it only ever lengthens the
 * stack of a failed call's ServiceError, which fromServiceError turns into an ApiError without it.
 * The call starts synchronously, so the limit is back before any other code runs.
 */
function withoutCallerStack<T>(start: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return start();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * A typed promise client; every call carries its request context signed for the
 * target service (a token valid at least until the call's deadline, reused by the
 * signer across calls with the same method and signed context), its request id and
 * (a write with an Idempotency-Key) the key and fingerprint beside the token, and a
 * deadline.
 */
export function createClient<T extends GenServiceMethods>(
  service: GenService<T>,
  address: string,
  options: ClientOptions,
): PromiseClient<T> & { close(): void } {
  const desc = service as unknown as DescService;
  const raw = rawClient(desc, address, options.channelOptions);
  const { signer, audience, log } = options;
  const retry = { ...CALL_RETRY_DEFAULTS, ...options.retry };
  const out: Record<string, unknown> = { close: () => raw.close() };
  for (const m of desc.methods) {
    const method = `/${desc.typeName}/${m.name}`;
    const observed = options.metrics?.grpcClientMethod(audience, m.name);
    out[m.localName] = (req: unknown, o: CallOptions) =>
      new Promise((resolve, reject) => {
        // Tests only (keyed-work.ts): a call made by a keyed call's work before its key is claimed fails it.
        if (keyedCallChecks.flow !== undefined) checkClientCall(`${audience}${method}`);
        // The service's work deadline, and the grace in which its answer (or its last commit) reaches us.
        const work = Date.now() + (o.deadlineMs ?? options.deadlineMs ?? 5000);
        const deadline = work + DEADLINE_GRACE_MS;
        const md = new grpc.Metadata();
        md.set(WORK_DEADLINE_METADATA_KEY, String(work));
        md.set(CONTEXT_METADATA_KEY, signer.sign(o.context, { audience, method, deadline }));
        md.set(REQUEST_ID_METADATA_KEY, o.context.requestId);
        const idem = o.context.idempotency;
        if (idem) {
          md.set(IDEMPOTENCY_KEY_METADATA_KEY, idem.key);
          md.set(IDEMPOTENCY_FINGERPRINT_METADATA_KEY, idem.fingerprint);
        }
        // A read, or a write under an Idempotency-Key (it runs once per key, idempotency.ts), is safe to send again.
        const repeatable = safeToRepeat(m) || idem !== undefined;
        const attempt = (n: number) => {
          const call = withoutCallerStack(
            () =>
              raw[m.localName]!(req, md, { deadline }, (e: grpc.ServiceError | null, r: unknown) => {
                // Each send's status, a retried one's too (dpp_grpc_client_handled_total).
                observed?.(e ? (e.code ?? grpc.status.UNKNOWN) : grpc.status.OK);
                if (!e) return resolve(r);
                const wait =
                  repeatable && n < retry.maxAttempts ? retryDelay(e, n, retry.backoffMs) : undefined;
                if (wait !== undefined && Date.now() + wait < work) {
                  log?.info(
                    { service: audience, rpc: m.name, attempt: n, grpc_message: e.details },
                    "service unavailable; the call is safe to repeat and is sent again",
                  );
                  setTimeout(() => attempt(n + 1), wait);
                } else reject(fromServiceError(e, audience, log));
              }) as unknown as grpc.ClientUnaryCall,
          );
          // Only a call with an Idempotency-Key can be answered by a replay (addService). Initial metadata
          // arrives before the answer: a replay is known when the promise resolves.
          if (idem)
            call.on("metadata", (received: grpc.Metadata) => {
              if (received.get(REPLAYED_METADATA_KEY)[0] === "true")
                o.context.outcome = { ...o.context.outcome, idempotentReplayed: true };
            });
        };
        attempt(1);
      });
  }
  return out as PromiseClient<T> & { close(): void };
}

export interface HealthClient {
  /** The serving status of `service` ("" is the whole server); NOT_FOUND for an unknown name. */
  check(service?: string, deadlineMs?: number): Promise<healthV1.HealthCheckResponse_ServingStatus>;
  close(): void;
}

/**
 * A client of grpc.health.v1.Health, the one service that needs no signed
 * context (Kubernetes probes cannot sign; it reveals nothing about tenants).
 */
export function createHealthClient(
  address: string,
  options: { deadlineMs?: number; channelOptions?: grpc.ChannelOptions } = {},
): HealthClient {
  const raw = rawClient(healthV1.Health as unknown as DescService, address, options.channelOptions);
  return {
    close: () => raw.close(),
    check: (service = "", deadlineMs = options.deadlineMs ?? 1000) =>
      new Promise((resolve, reject) =>
        raw.check!(
          create(healthV1.HealthCheckRequestSchema, { service }),
          new grpc.Metadata(),
          { deadline: Date.now() + deadlineMs },
          (e: grpc.ServiceError | null, r: healthV1.HealthCheckResponse) =>
            e ? reject(fromServiceError(e, "health")) : resolve(r.status),
        ),
      ),
  };
}

/** The promise client type of a generated service, e.g. ClientOf<typeof PassportService>. */
export type ClientOf<S> = S extends GenService<infer T> ? PromiseClient<T> & { close(): void } : never;

/** The handler map type of a generated service, e.g. ImplOf<typeof PassportService>. */
export type ImplOf<S> = S extends GenService<infer T> ? ServiceImpl<T> : never;
