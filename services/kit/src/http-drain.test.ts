import http from "node:http";
import type { AddressInfo } from "node:net";
import { closeConnectionsWhileDraining } from "./server";

/** One GET over a kept connection; its status and Connection header as the client saw them. */
function get(port: number, agent: http.Agent): Promise<{ status: number; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port, path: "/", agent }, (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode!, connection: res.headers.connection }));
      })
      .on("error", reject);
  });
}

it("keeps connections while the process serves, and closes each after its answer once it drains", async () => {
  let draining = false;
  // The handler sets its own headers with writeHead, as the gateway's and the public surface's do.
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "Content-Type": "text/plain" });
    res.end("ok");
  });
  closeConnectionsWhileDraining(server, () => draining);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    expect(await get(port, agent)).toEqual({ status: 200, connection: "keep-alive" });
    draining = true;
    expect(await get(port, agent)).toEqual({ status: 200, connection: "close" });
    // The client left the connection: the server holds none open.
    await new Promise((r) => setTimeout(r, 50));
    const open = await new Promise<number>((r) => server.getConnections((_e, n) => r(n)));
    expect(open).toBe(0);
  } finally {
    agent.destroy();
    await new Promise((r) => server.close(r));
  }
});
