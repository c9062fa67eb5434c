import type { Server as HttpServer } from "node:http";
import { isMainThread, parentPort } from "node:worker_threads";
import * as grpc from "@grpc/grpc-js";
import { create } from "@bufbuild/protobuf";
import { healthV1 } from "@dpp/proto";
import { serviceDefinition } from "./grpc";
import type { Logger } from "./logger";

const { HealthCheckResponse_ServingStatus: ServingStatus } = healthV1;
type ServingStatus = healthV1.HealthCheckResponse_ServingStatus;

/**
 * The grpc.health.v1 service. "" is the whole server; each registered service
 * name has its own status. Watch streams the current status and every change.
 */
export class HealthService {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly watchers = new Set<{ service: string; call: grpc.ServerWritableStream<any, any> }>();

  set(service: string, status: ServingStatus): void {
    this.statuses.set(service, status);
    for (const w of this.watchers) if (w.service === service) w.call.write(this.response(service));
  }

  setAll(status: ServingStatus): void {
    for (const name of [...this.statuses.keys()]) this.set(name, status);
  }

  private response(service: string) {
    return create(healthV1.HealthCheckResponseSchema, {
      status: this.statuses.get(service) ?? ServingStatus.SERVICE_UNKNOWN,
    });
  }

  register(server: grpc.Server): void {
    server.addService(serviceDefinition(healthV1.Health), {
      check: (
        call: grpc.ServerUnaryCall<healthV1.HealthCheckRequest, unknown>,
        cb: grpc.sendUnaryData<unknown>,
      ) => {
        if (!this.statuses.has(call.request.service)) {
          cb({ code: grpc.status.NOT_FOUND, details: "unknown service" }, null);
          return;
        }
        cb(null, this.response(call.request.service));
      },
      watch: (call: grpc.ServerWritableStream<healthV1.HealthCheckRequest, unknown>) => {
        const w = { service: call.request.service, call };
        this.watchers.add(w);
        call.write(this.response(w.service));
        call.on("cancelled", () => this.watchers.delete(w));
      },
    });
  }

  endWatches(): void {
    for (const w of this.watchers) w.call.end();
    this.watchers.clear();
  }
}

export interface GrpcServerHandle {
  server: grpc.Server;
  health: HealthService;
  port: number;
  /** Stops accepting calls, lets running calls finish within graceMs, then forces. */
  shutdown(graceMs?: number): Promise<void>;
}

/** GRPC_MAX_CONNECTION_AGE_MS's default: 5 minutes. */
export const MAX_CONNECTION_AGE_MS_DEFAULT = 300_000;
/** GRPC_MAX_CONNECTION_AGE_GRACE_MS's default: 30 seconds. */
export const MAX_CONNECTION_AGE_GRACE_MS_DEFAULT = 30_000;

export interface GrpcServerOptions {
  /**
   * A connection older than this is closed (GOAWAY, a little jitter added by grpc-js): its client connects again,
   * resolving the service's name anew, and so spreads its calls over replicas started since (round-robin, grpc.ts).
   */
  maxConnectionAgeMs?: number;
  /** The calls running on a connection closed for its age get this long to finish before it is cut. */
  maxConnectionAgeGraceMs?: number;
}

/**
 * Starts a gRPC server on `address` with the health service. `register` adds the
 * service implementations and returns their fully-qualified names.
 */
export async function startGrpcServer(
  address: string,
  log: Logger,
  register: (server: grpc.Server) => string[],
  options: GrpcServerOptions = {},
): Promise<GrpcServerHandle> {
  const server = new grpc.Server({
    "grpc.max_receive_message_length": 16 * 1024 * 1024,
    "grpc.max_connection_age_ms": options.maxConnectionAgeMs ?? MAX_CONNECTION_AGE_MS_DEFAULT,
    "grpc.max_connection_age_grace_ms":
      options.maxConnectionAgeGraceMs ?? MAX_CONNECTION_AGE_GRACE_MS_DEFAULT,
  });
  const health = new HealthService();
  health.register(server);
  const names = register(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  health.set("", ServingStatus.SERVING);
  for (const n of names) health.set(n, ServingStatus.SERVING);
  log.info({ address, port, services: names }, "grpc server listening");
  return {
    server,
    health,
    port,
    shutdown: (graceMs = 10000) =>
      new Promise<void>((resolve) => {
        health.setAll(ServingStatus.NOT_SERVING);
        health.endWatches();
        const timer = setTimeout(() => {
          log.warn("grace period over; forcing grpc shutdown");
          server.forceShutdown();
          resolve();
        }, graceMs);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}

/**
 * What a host posts to a service it runs in a worker thread (the local stack, tools/stack) to stop it as SIGTERM
 * does: signals reach only the main thread of a process.
 */
export const SHUTDOWN_MESSAGE = { type: "dpp.shutdown" } as const;

function isShutdownMessage(message: unknown): boolean {
  return (message as { type?: unknown } | null)?.type === SHUTDOWN_MESSAGE.type;
}

/**
 * Runs `stop` once on SIGTERM or SIGINT, or in a worker thread on SHUTDOWN_MESSAGE from its parent, then exits
 * (a thread's process.exit ends the thread), with code 1 when `stop` has not finished after `forceAfterMs`. Used
 * by every service's main.
 */
export function onShutdownSignal(
  log: Logger,
  stop: () => Promise<void>,
  o: { forceAfterMs?: number } = {},
): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down");
    // The drain is bounded: a step that hangs does not keep the process (and its replacement) waiting.
    if (o.forceAfterMs !== undefined)
      setTimeout(() => {
        log.error({ after_ms: o.forceAfterMs }, "shutdown did not finish in time; exiting");
        process.exit(1);
      }, o.forceAfterMs).unref();
    stop()
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        log.error({ err }, "shutdown failed");
        process.exit(1);
      });
  };
  process.on("SIGTERM", () => handler("SIGTERM"));
  process.on("SIGINT", () => handler("SIGINT"));
  if (!isMainThread && parentPort) {
    parentPort.on("message", (message: unknown) => {
      if (isShutdownMessage(message)) handler("shutdown message");
    });
    // The port alone never keeps the thread alive (the service's servers and timers do).
    parentPort.unref();
  }
}

/**
 * While the process drains (from SIGTERM until its server closes: SHUTDOWN_DRAIN_DELAY_MS), every answer asks its
 * client to close the connection (`Connection: close`): clients leave the replica one connection at a time, after
 * an answer, rather than finding a kept connection closed under a request they had just sent on it.
 */
export function closeConnectionsWhileDraining(server: HttpServer, draining: () => boolean): void {
  server.prependListener("request", (_req, res) => {
    if (draining()) res.setHeader("Connection", "close");
  });
}

/**
 * Closes an HTTP server as a drain does: stops accepting connections, closes the idle ones, lets the requests in
 * flight finish within graceMs, then closes what is left.
 */
export function closeHttpServer(server: HttpServer, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const t = setTimeout(() => {
      server.closeAllConnections();
      resolve();
    }, graceMs);
    t.unref();
    server.close(() => {
      clearTimeout(t);
      resolve();
    });
    server.closeIdleConnections();
  });
}
