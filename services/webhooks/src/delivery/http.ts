/**
 * One delivery over HTTP: the host is resolved now and every address it resolves to must be allowed
 * (../domain/address.ts); the connection is made to the address that was checked (the name is sent as Host and
 * TLS server name, and the certificate is verified for it), so a DNS answer that changes after the check
 * (rebinding) is never used. Redirects are not followed (a 3xx is a failure), the connection and the whole
 * exchange have short timeouts, and at most `maxResponseBytes` of the answer are read.
 *
 * A run of deliveries to one endpoint may pass a keep-alive `agent` of its own: its connection is kept only
 * after an answer read to its end, and only to the address the next delivery's check allows again (the agent
 * pools connections by the address connected to), so a run pays one connection, not one per event.
 */
import http from "node:http";
import https from "node:https";
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { addressAllowed } from "../domain/address";
import { hostOf } from "../domain/endpoint";

/** A host's addresses (tests replace the system resolver). */
export type Resolve = (host: string) => Promise<string[]>;

export const systemResolve: Resolve = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

export interface HttpOptions {
  connectTimeoutMs: number;
  timeoutMs: number;
  maxResponseBytes: number;
  resolve: Resolve;
  /** Extra CA certificates (tests with a local TLS receiver). */
  ca?: string;
}

export interface SendResult {
  ok: boolean;
  /** The receiver's status, when it answered. */
  status?: number;
  /** Why it failed: address_not_allowed, unresolvable, connect_timeout, timeout, connection_failed, redirect, http_<status>. */
  error?: string;
  latencyMs: number;
}

/** The addresses a delivery may connect to, or why none. */
export async function allowedAddress(
  url: URL,
  livemode: boolean,
  resolve: Resolve,
): Promise<{ address: string } | { error: "address_not_allowed" | "unresolvable" }> {
  const { host, literal } = hostOf(url);
  let addresses: string[];
  if (literal) addresses = [host];
  else {
    try {
      addresses = await resolve(host);
    } catch {
      return { error: "unresolvable" };
    }
  }
  if (addresses.length === 0) return { error: "unresolvable" };
  // One refused address refuses the host: a name must not mix a public address with an internal one.
  if (!addresses.every((a) => addressAllowed(a, livemode))) return { error: "address_not_allowed" };
  return { address: addresses[0]! };
}

/** A keep-alive agent for one run of deliveries to one endpoint (destroy it when the run ends). */
export function runAgent(url: URL): http.Agent {
  const o = { keepAlive: true, maxSockets: 1, maxFreeSockets: 1 };
  return url.protocol === "https:" ? new https.Agent(o) : new http.Agent(o);
}

export async function send(
  url: URL,
  livemode: boolean,
  headers: Record<string, string>,
  body: string,
  o: HttpOptions,
  agent?: http.Agent,
): Promise<SendResult> {
  const started = performance.now();
  const done = (r: Omit<SendResult, "latencyMs">): SendResult => ({
    ...r,
    latencyMs: Math.round(performance.now() - started),
  });
  const target = await allowedAddress(url, livemode, o.resolve);
  if ("error" in target) return done({ ok: false, error: target.error });
  const { host } = hostOf(url);
  const secure = url.protocol === "https:";
  const payload = Buffer.from(body, "utf8");
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    // `keep`: the answer was read to its end, so its connection may serve the run's next delivery.
    const finish = (r: Omit<SendResult, "latencyMs">, keep = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(overall);
      clearTimeout(connect);
      if (!(keep && agent)) req.destroy();
      resolve(done(r));
    };
    const options: https.RequestOptions = {
      method: "POST",
      host: target.address,
      family: isIP(target.address),
      port: url.port || (secure ? 443 : 80),
      path: url.pathname + url.search,
      headers: {
        ...headers,
        host: url.host,
        "content-type": "application/json",
        "content-length": String(payload.length),
        "user-agent": "dpp-webhooks/1",
      },
      agent: agent ?? false,
      ...(secure ? { servername: isIP(host) ? undefined : host, ca: o.ca } : {}),
    };
    const req = (secure ? https : http).request(options, (res) => {
      const status = res.statusCode ?? 0;
      let read = 0;
      res.on("data", (chunk: Buffer) => {
        read += chunk.length;
        // The answer's body is not used: read a little of it, then stop.
        if (read >= o.maxResponseBytes) settle(false);
      });
      res.on("end", () => settle(true));
      res.on("error", () => settle(false));
      function settle(keep: boolean) {
        if (status >= 200 && status < 300) finish({ ok: true, status }, keep);
        else if (status >= 300 && status < 400) finish({ ok: false, status, error: "redirect" });
        else finish({ ok: false, status, error: `http_${status}` });
      }
    });
    const connect = setTimeout(() => finish({ ok: false, error: "connect_timeout" }), o.connectTimeoutMs);
    const overall = setTimeout(() => finish({ ok: false, error: "timeout" }), o.timeoutMs);
    req.on("socket", (socket) => {
      // A kept connection is connected already.
      if (!socket.connecting) clearTimeout(connect);
      else socket.once(secure ? "secureConnect" : "connect", () => clearTimeout(connect));
    });
    req.on("error", () => finish({ ok: false, error: "connection_failed" }));
    req.end(payload);
  });
}
