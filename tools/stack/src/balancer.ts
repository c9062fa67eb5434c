/**
 * The one port in front of an HTTP listener that runs as several replicas in the local stack (the gateway's
 * 8080, the public surface's 8081; docs/decisions/0062-local-replicas.md): a TCP balancer in the stack's process.
 * Each connection it accepts goes to the next replica in turn that is up, and stays with it (HTTP keep-alive
 * included); a replica that refuses the connection (it died, it is being restarted) is skipped for the next one.
 * Bytes are relayed as they are: the replicas see every request, the client sees every answer, a replica that
 * dies resets its connections (the client sees the reset, as it would a load balancer's).
 */
import net from "node:net";

export interface BalancerOptions {
  /** Where the balancer listens. */
  host: string;
  port: number;
  /** The replicas' addresses (127.0.0.1:<port>), by replica index. */
  backends: readonly { host: string; port: number }[];
  /** Whether replica `i` takes new connections (false: it is stopping or stopped on purpose). */
  accepting: (i: number) => boolean;
}

export interface Balancer {
  readonly port: number;
  /** Connections handed to each replica since the start, by replica index. */
  readonly handed: readonly number[];
  /** Stops listening and ends every relayed connection. */
  close(): Promise<void>;
}

export async function startBalancer(o: BalancerOptions): Promise<Balancer> {
  const handed = o.backends.map(() => 0);
  const open = new Set<net.Socket>();
  let next = 0;

  /** Connects `client` to the first replica from `next` on that accepts it; none: the client is reset. */
  const relay = (client: net.Socket) => {
    client.pause();
    open.add(client);
    client.once("close", () => open.delete(client));
    client.on("error", () => undefined);
    const order = o.backends.map((_, k) => (next + k) % o.backends.length);
    next = (next + 1) % o.backends.length;
    const candidates = order.filter((i) => o.accepting(i));
    const attempt = (k: number): void => {
      if (client.destroyed) return;
      const i = candidates[k];
      if (i === undefined) {
        client.resetAndDestroy();
        return;
      }
      const upstream = net.connect({ ...o.backends[i]!, allowHalfOpen: true });
      let connected = false;
      upstream.once("connect", () => {
        connected = true;
        handed[i]!++;
        open.add(upstream);
        upstream.once("close", () => open.delete(upstream));
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
      upstream.on("error", () => {
        if (!connected) {
          upstream.destroy();
          attempt(k + 1);
          return;
        }
        // The replica went away mid-connection (killed): the client sees a reset, not a clean end.
        if (!client.destroyed) client.resetAndDestroy();
      });
      upstream.once("close", () => {
        if (connected && !client.destroyed && !client.writableEnded) client.end();
      });
      client.once("close", () => {
        if (!upstream.destroyed) upstream.destroy();
      });
    };
    attempt(0);
  };

  const server = net.createServer({ allowHalfOpen: true }, relay);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    handed,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of open) s.destroy();
      }),
  };
}
