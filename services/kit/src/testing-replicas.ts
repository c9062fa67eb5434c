/**
 * Replicas of one gRPC service for tests of balancing, retries and draining (docs/decisions/0061): real servers
 * (startGrpcServer, with its health service and connection age cap) serving every method of PassportService
 * with an empty answer, each recording the calls it received, and a resolver whose addresses a test changes as
 * DNS changes with a Service's pods.
 */
import * as grpc from "@grpc/grpc-js";
import { create, type DescMessage, type DescService } from "@bufbuild/protobuf";
import { passportV1 } from "@dpp/proto";
import { serviceDefinition } from "./grpc";
import { createLogger } from "./logger";
import { startGrpcServer, type GrpcServerHandle, type GrpcServerOptions } from "./server";

/** What a replica does with a call it received: answer it, or hold it (answered or dropped later). */
export type Behaviour = "answer" | "hold";

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
    handlers[m.localName] = (_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      r.calls.push(m.name);
      const answer = () => cb(null, create(m.output as DescMessage, {}));
      if (r.behaviour(m.name) === "hold") {
        r.held.push(answer);
        for (const w of waiting.splice(0)) w();
      } else answer();
    };
  const handle = await startGrpcServer(
    `127.0.0.1:${o.port ?? 0}`,
    createLogger(`replica-${name}`, "silent"),
    (server) => {
      server.addService(serviceDefinition(desc), handlers);
      return [desc.typeName];
    },
    o,
  );
  let stopped: Promise<void> | undefined;
  return Object.assign(r, {
    port: handle.port,
    handle,
    kill: () => handle.server.forceShutdown(),
    stop: () => (stopped ??= handle.shutdown(200)),
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
      updateResolution(): void {
        const ports = registry.names.get(this.target.path) ?? [];
        process.nextTick(() =>
          this.listener(
            { ok: true, value: ports.map((port) => ({ addresses: [{ host: "127.0.0.1", port }] })) },
            {},
            null,
            "",
          ),
        );
      }
      destroy(): void {}
      static getDefaultAuthority(target: { path: string }): string {
        return target.path;
      }
    }
    grpc.experimental.registerResolver(scheme, Resolver as unknown as Parameters<typeof grpc.experimental.registerResolver>[1]);
    return registry;
  }

  set(name: string, ports: number[]): void {
    this.names.set(name, ports);
  }
}
