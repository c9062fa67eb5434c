// What one unary grpc-js call costs by the size of its answer: a server process answering a fixed payload, and
// this process as the client, 16 calls in flight (as the benchmark's 16 connections keep the gateway's calls to
// a service), for each size and HTTP/2 flow-control window asked. Prints calls per second and CPU milliseconds
// per call of the client and of the server (from /proc, every thread: V8's helpers included). It asserts
// nothing. A feed page of 100 events is about 50 KB, a passport about 1 KB: the difference between the two rows
// is what moving a page's bytes costs the gRPC hop alone (docs/performance.md, "Eighth round").
//
//   node tools/bench/grpc-payload.mjs                          sizes 1000 and 50000, the default window
//   node tools/bench/grpc-payload.mjs --sizes 1000,50000,200000 --seconds 5 --windows default,1048576
import { fork } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const grpc = require("@grpc/grpc-js");

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const IN_FLIGHT = 16;
const identity = (b) => b;
const SERVICE = {
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

/** CPU milliseconds a process has used, all its threads (utime + stime). */
function cpuMs(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / 100; // USER_HZ is 100 on Linux
}

if (process.argv[2] === "--serve") {
  const answer = Buffer.alloc(Number(process.argv[3]), 0x61);
  const server = new grpc.Server();
  server.addService(SERVICE, { get: (_call, cb) => cb(null, answer) });
  server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, port) => {
    if (err) throw err;
    process.send(port);
  });
} else {
  const sizes = arg("sizes", "1000,50000").split(",").map(Number);
  const windows = arg("windows", "default").split(",");
  const seconds = Number(arg("seconds", "5"));
  console.log(`grpc-js unary calls, ${IN_FLIGHT} in flight, ${seconds} s each; CPU in ms per call`);
  console.log("size     window    calls/s  client  server  total");
  for (const size of sizes)
    for (const window of windows) {
      const server = fork(fileURLToPath(import.meta.url), ["--serve", String(size)]);
      const port = await new Promise((resolve) => server.once("message", resolve));
      const options = window === "default" ? {} : { "grpc-node.flow_control_window": Number(window) };
      const Client = grpc.makeGenericClientConstructor(SERVICE);
      const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), options);
      const call = () =>
        new Promise((resolve, reject) =>
          client.get(Buffer.from("q"), (err, res) => (err ? reject(err) : resolve(res))),
        );
      const loop = async (until) => {
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
      const c0 = cpuMs(process.pid);
      const s0 = cpuMs(server.pid);
      const t0 = Date.now();
      const n = await loop(t0 + seconds * 1000);
      const elapsed = (Date.now() - t0) / 1000;
      const clientMs = (cpuMs(process.pid) - c0) / n;
      const serverMs = (cpuMs(server.pid) - s0) / n;
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
}
