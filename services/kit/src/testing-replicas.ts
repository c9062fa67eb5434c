/**
 * Replicas of one gRPC service for tests of balancing, retries and draining (docs/decisions/0061): real servers
 * (startGrpcServer, with its health service and connection age cap) serving every method of PassportService
 * with an empty answer, each recording the calls it received, and a resolver whose addresses a test changes as
 * DNS changes with a Service's pods.
 */
import net from "node:net";
import * as grpc from "@grpc/grpc-js";
import { create, type DescMessage, type DescService } from "@bufbuild/protobuf";
import { passportV1 } from "@dpp/proto";
import { ApiError } from "@dpp/contract";
import { serviceDefinition, toServiceError } from "./grpc";
import { createLogger } from "./logger";
import { startGrpcServer, type GrpcServerHandle, type GrpcServerOptions } from "./server";

/**
 * What a replica does with a call it received: answer it, hold it (answered or dropped later), or refuse it with
 * the service's own 503 (storage_unavailable: UNAVAILABLE with the refusal in the trailers).
 */
export type Behaviour = "answer" | "hold" | "refuse";

export interface Replica {
  name: string;
  port: number;
  handle: GrpcServerHandle;
  /** Method names of the calls received, in order. */
  calls: string[];
  /** Each method's behaviour; "answer" when unset. */
  behaviour: (method: string) => Behaviour;
  /** Calls held, answered by calling them. */
  held: Array<() => void>;
  /** Resolves when the next call is held. */
  nextHeld(): Promise<void>;
  /** Closes every connection at once, in-flight calls included (a pod killed). */
  kill(): void;
  stop(): Promise<void>;
}

export async function replica(
  name: string,
  o: GrpcServerOptions & { port?: number; behaviour?: (method: string) => Behaviour } = {},
): Promise<Replica> {
  const desc = passportV1.PassportService as unknown as DescService;
  const waiting: Array<() => void> = [];
  const r = {
    name,
    calls: [] as string[],
    held: [] as Array<() => void>,
    behaviour: o.behaviour ?? (() => "answer" as Behaviour),
    nextHeld: () => new Promise<void>((resolve) => waiting.push(resolve)),
  } as Partial<Replica> & Pick<Replica, "calls" | "held" | "behaviour">;
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const m of desc.methods)
    handlers[m.localName] = (
      _call: grpc.ServerUnaryCall<unknown, unknown>,
      cb: grpc.sendUnaryData<unknown>,
    ) => {
      r.calls.push(m.name);
      const answer = () => cb(null, create(m.output as DescMessage, {}));
      const behaviour = r.behaviour(m.name);
      if (behaviour === "hold") {
        r.held.push(answer);
        for (const w of waiting.splice(0)) w();
      } else if (behaviour === "refuse") cb(toServiceError(new ApiError("storage_unavailable")), null);
      else answer();
    };
  const handle = await startGrpcServer(
    "127.0.0.1:0",
    createLogger(`replica-${name}`, "silent"),
    (server) => {
      server.addService(serviceDefinition(desc), handlers);
      return [desc.typeName];
    },
    o,
  );
  // Callers connect through a TCP relay, so that kill() can cut every connection as a dying process does.
  const sockets = new Set<net.Socket>();
  const relay = net.createServer((inbound) => {
    const outbound = net.connect(handle.port, "127.0.0.1");
    for (const [from, to] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      sockets.add(from);
      from.pipe(to);
      from.on("error", () => to.destroy());
      from.on("close", () => {
        sockets.delete(from);
        to.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => relay.listen(o.port ?? 0, "127.0.0.1", resolve));
  const closeRelay = () => {
    relay.close();
    for (const socket of sockets) socket.resetAndDestroy();
  };
  let stopped: Promise<void> | undefined;
  return Object.assign(r, {
    port: (relay.address() as net.AddressInfo).port,
    handle,
    kill: () => {
      closeRelay();
      handle.server.forceShutdown();
    },
    stop: () => (stopped ??= handle.shutdown(200).then(closeRelay)),
  }) as Replica;
}

type ResolverListener = (
  endpoints: { ok: true; value: Array<{ addresses: Array<{ host: string; port: number }> }> },
  attributes: Record<string, unknown>,
  serviceConfig: null,
  note: string,
) => boolean;

/**
 * A resolver of `<scheme>:///<name>` whose answer is the ports a test set for the name on 127.0.0.1, read each
 * time grpc-js resolves the name again (as it does with DNS after a connection closed).
 */
export class TestResolver {
  private readonly names = new Map<string, number[]>();

  static register(scheme: string): TestResolver {
    const registry = new TestResolver();
    class Resolver {
      constructor(
        private readonly target: { path: string },
        private readonly listener: ResolverListener,
      ) {}
      private last = 0;
      private pending: NodeJS.Timeout | undefined;
      // As grpc-js's DNS resolver does (grpc.dns_min_time_between_resolutions_ms), at most one answer per 100 ms:
      // grpc-js asks again at once while no address connects.
      updateResolution(): void {
        if (this.pending) return;
        const wait = Math.max(0, this.last + 100 - Date.now());
        this.pending = setTimeout(() => {
          this.pending = undefined;
          this.last = Date.now();
          const ports = registry.names.get(this.target.path) ?? [];
          this.listener(
            { ok: true, value: ports.map((port) => ({ addresses: [{ host: "127.0.0.1", port }] })) },
            {},
            null,
            "",
          );
        }, wait);
      }
      destroy(): void {
        clearTimeout(this.pending);
        this.pending = undefined;
      }
      static getDefaultAuthority(target: { path: string }): string {
        return target.path;
      }
    }
    grpc.experimental.registerResolver(
      scheme,
      Resolver as unknown as Parameters<typeof grpc.experimental.registerResolver>[1],
    );
    return registry;
  }

  set(name: string, ports: number[]): void {
    this.names.set(name, ports);
  }
}
