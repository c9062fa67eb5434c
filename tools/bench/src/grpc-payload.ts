/**
 * What one unary grpc-js call costs by the size of its answer: a server process answering a fixed payload, and
 * this process as the client, 16 calls in flight (as the benchmark's 16 connections keep the gateway's calls to
 * a service), for each size and HTTP/2 flow-control window asked. Prints calls per second and CPU milliseconds
 * per call of the client and of the server (every thread of each: V8's helpers included). It asserts nothing. A
 * feed page of 100 events is about 50 KB, a passport about 1 KB: the difference between the two rows is what
 * moving a page's bytes costs the gRPC hop alone (docs/performance.md, "Eighth round").
 *
 *   node --import tsx tools/bench/src/grpc-payload.ts
 *   node --import tsx tools/bench/src/grpc-payload.ts --sizes 1000,50000 --windows default,1048576 --seconds 5
 */
import { fork } from "node:child_process";
import * as grpc from "@grpc/grpc-js";
import { processCpuMs } from "./procstat";

const IN_FLIGHT = 16;
const identity = (b: Buffer) => b;
const SERVICE: grpc.ServiceDefinition = {
  get: {
    path: "/bench.Payload/Get",
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
}

function serve(size: number) {
  const answer = Buffer.alloc(size, 0x61);
  const server = new grpc.Server();
  server.addService(SERVICE, {
    get: (_call: unknown, cb: grpc.sendUnaryData<Buffer>) => cb(null, answer),
  });
  server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, port) => {
    if (err) throw err;
    process.send!(port);
  });
}

async function measure(size: number, window: string, seconds: number) {
  // The child runs with this process's node flags (the tsx loader included).
  const server = fork(__filename, ["--serve", String(size)]);
  const port = await new Promise<number>((resolve) => server.once("message", (p) => resolve(p as number)));
  const options = window === "default" ? {} : { "grpc-node.flow_control_window": Number(window) };
  const Client = grpc.makeGenericClientConstructor(SERVICE, "Payload");
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), options) as grpc.Client &
    Record<string, (req: Buffer, cb: (err: Error | null) => void) => void>;
  const call = () =>
    new Promise<void>((resolve, reject) =>
      client.get!(Buffer.from("q"), (err) => (err ? reject(err) : resolve())),
    );
  const loop = async (until: number) => {
    let n = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (Date.now() < until) {
          await call();
          n++;
        }
      }),
    );
    return n;
  };
  await loop(Date.now() + 1000); // warm-up
  const c0 = processCpuMs(process.pid);
  const s0 = processCpuMs(server.pid!);
  const t0 = Date.now();
  const n = await loop(t0 + seconds * 1000);
  const elapsed = (Date.now() - t0) / 1000;
  const clientMs = (processCpuMs(process.pid) - c0) / n;
  const serverMs = (processCpuMs(server.pid!) - s0) / n;
  console.log(
    [
      String(size).padEnd(8),
      window.padEnd(9),
      String(Math.round(n / elapsed)).padStart(7),
      clientMs.toFixed(3).padStart(7),
      serverMs.toFixed(3).padStart(7),
      (clientMs + serverMs).toFixed(3).padStart(6),
    ].join(" "),
  );
  client.close();
  server.kill();
  await new Promise((resolve) => server.once("exit", resolve));
}

async function main() {
  const sizes = arg("sizes", "1000,50000").split(",").map(Number);
  const windows = arg("windows", "default").split(",");
  const seconds = Number(arg("seconds", "5"));
  console.log(`grpc-js unary calls, ${IN_FLIGHT} in flight, ${seconds} s each; CPU in ms per call`);
  console.log("size     window    calls/s  client  server  total");
  for (const size of sizes) for (const window of windows) await measure(size, window, seconds);
}

if (process.argv[2] === "--serve") serve(Number(process.argv[3]));
else
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
