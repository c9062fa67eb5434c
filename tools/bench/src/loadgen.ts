/**
 * The load generator: its own process (so its CPU is no side's), driven by the runner over IPC. A closed loop
 * of a fixed number of keep-alive connections for the measured rounds; an open loop of creates at a fixed rate
 * with a feed follower for the feed lag.
 */
import http from "node:http";
import {
  PUBLIC_CASES,
  FOLLOWS_CURSOR,
  listEnd,
  nextRequest,
  createBody,
  type CaseInput,
  type CaseName,
  type ConnectionState,
  type HttpRequest,
  type Target,
} from "./cases";

export type LoadCommand =
  | {
      type: "run";
      target: Target;
      kase: CaseName;
      seconds: number;
      connections: number;
      input: CaseInput;
    }
  | { type: "create"; target: Target; bodies: Record<string, unknown>[]; connections: number }
  | {
      type: "lag";
      target: Target;
      rate: number;
      seconds: number;
      tag: string;
      drainSeconds: number;
      /** "feed": a follower reads GET .../events; "webhook": a local receiver takes the pushed deliveries. */
      via?: "feed" | "webhook";
    }
  | { type: "rate"; target: Target; kase: CaseName; rate: number; seconds: number; input: CaseInput };

export interface RunResult {
  /** Answers with the expected status. */
  ok: number;
  /** Other answers and transport errors, by status ("error" for no answer). */
  other: Record<string, number>;
  seconds: number;
  p50: number;
  p99: number;
  /** A connection stopped because it had nothing left to do (publish: no draft left). */
  exhausted: boolean;
  firstError?: string;
}

export interface LagResult {
  via: "feed" | "webhook";
  rate: number;
  seconds: number;
  sent: number;
  created: number;
  seen: number;
  lagsMs: number[];
  /** Deliveries of an event already received (webhook only; at-least-once allows them, this counts them). */
  duplicates?: number;
}

interface Answer {
  status: number;
  /** The answer's bytes, decoded only where a step reads them (a body is not part of what is measured). */
  raw: Buffer;
}

const text = (a: Answer) => a.raw.toString("utf8");

function send(agent: http.Agent, base: URL, r: HttpRequest): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...r.headers };
    if (r.body !== undefined) headers["content-length"] = Buffer.byteLength(r.body);
    const req = http.request(
      { agent, host: base.hostname, port: base.port, method: r.method, path: r.path, headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            raw: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(r.body);
  });
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Where a case's requests go: the public surface for the public cases, the API otherwise. */
const baseOf = (target: Target, kase: CaseName) =>
  new URL(PUBLIC_CASES.has(kase) ? target.publicBaseUrl! : target.baseUrl);

async function run(c: Extract<LoadCommand, { type: "run" }>): Promise<RunResult> {
  const base = baseOf(c.target, c.kase);
  const agent = new http.Agent({ keepAlive: true, maxSockets: c.connections });
  const latencies: number[] = [];
  const other: Record<string, number> = {};
  let ok = 0;
  let n = 0;
  let exhausted = false;
  let firstError: string | undefined;
  const t0 = process.hrtime.bigint();
  const until = t0 + BigInt(Math.round(c.seconds * 1e9));
  await Promise.all(
    Array.from({ length: c.connections }, async () => {
      const conn: ConnectionState = {};
      while (process.hrtime.bigint() < until) {
        const r = nextRequest(c.kase, c.target, c.input, conn, n++);
        if (!r) {
          exhausted = true;
          return;
        }
        const start = process.hrtime.bigint();
        try {
          const a = await send(agent, base, r);
          latencies.push(Number(process.hrtime.bigint() - start) / 1e6);
          if (a.status === r.expect) ok++;
          else {
            other[a.status] = (other[a.status] ?? 0) + 1;
            firstError ??= `${r.method} ${r.path} → ${a.status} ${text(a).slice(0, 300)}`;
          }
          if (FOLLOWS_CURSOR.has(c.kase) && a.status === 200) {
            const page = listEnd(a.raw);
            conn.cursor = page.has_more && page.next_cursor ? page.next_cursor : undefined;
          }
        } catch (err) {
          other.error = (other.error ?? 0) + 1;
          firstError ??= `${r.method} ${r.path} → ${(err as Error).message}`;
        }
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  agent.destroy();
  const sorted = Float64Array.from(latencies).sort();
  return {
    ok,
    other,
    seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    exhausted,
    firstError,
  };
}

/**
 * An open loop: requests of the case sent at a fixed rate (each at its scheduled time, whatever the answers
 * before it), for the latency at that rate; answers the same figures as a run.
 */
async function rate(c: Extract<LoadCommand, { type: "rate" }>): Promise<RunResult> {
  const base = baseOf(c.target, c.kase);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const latencies: number[] = [];
  const other: Record<string, number> = {};
  let ok = 0;
  let firstError: string | undefined;
  const total = Math.round(c.rate * c.seconds);
  const t0 = performance.now();
  const pending: Promise<void>[] = [];
  for (let n = 0; n < total; n++) {
    const due = t0 + (n * 1000) / c.rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const r = nextRequest(c.kase, c.target, c.input, {}, n)!;
    const start = performance.now();
    pending.push(
      send(agent, base, r).then(
        (a) => {
          latencies.push(performance.now() - start);
          if (a.status === r.expect) ok++;
          else {
            other[a.status] = (other[a.status] ?? 0) + 1;
            firstError ??= `${r.method} ${r.path} → ${a.status}`;
          }
        },
        (err: Error) => {
          other.error = (other.error ?? 0) + 1;
          firstError ??= `${r.method} ${r.path} → ${err.message}`;
        },
      ),
    );
  }
  await Promise.all(pending);
  const seconds = (performance.now() - t0) / 1000;
  agent.destroy();
  const sorted = Float64Array.from(latencies).sort();
  return {
    ok,
    other,
    seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    exhausted: false,
    firstError,
  };
}

/** Creates passports as fast as `connections` allow; answers their ids in order (undefined where refused). */
async function create(c: Extract<LoadCommand, { type: "create" }>): Promise<(string | undefined)[]> {
  const base = new URL(c.target.baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: c.connections });
  const path = `${base.pathname.replace(/\/$/, "")}/organizations/${encodeURIComponent(c.target.organization)}/passports`;
  const headers = { authorization: `Bearer ${c.target.key}`, "content-type": "application/json" };
  const ids: (string | undefined)[] = new Array(c.bodies.length);
  let next = 0;
  let failure: string | undefined;
  await Promise.all(
    Array.from({ length: c.connections }, async () => {
      for (let i = next++; i < c.bodies.length; i = next++) {
        const a = await send(agent, base, {
          method: "POST",
          path,
          headers,
          body: JSON.stringify(c.bodies[i]),
          expect: 201,
        });
        if (a.status === 201) ids[i] = (JSON.parse(text(a)) as { id: string }).id;
        else failure ??= `${a.status} ${text(a).slice(0, 300)}`;
      }
    }),
  );
  agent.destroy();
  if (failure) throw new Error(`prefill create refused: ${failure}`);
  return ids;
}

/**
 * Creates at `c.rate` for `c.seconds` (open loop: each create leaves on schedule whether or not earlier ones
 * answered), recording in `answeredAt` when each created passport's 201 arrived. The achieved rate's seconds: from
 * the first send to the last 201 (an overloaded system answers later than the schedule sends).
 */
async function createsAtRate(
  agent: http.Agent,
  base: URL,
  prefix: string,
  auth: Record<string, string>,
  c: { rate: number; seconds: number; tag: string },
  answeredAt: Map<string, number>,
): Promise<{ sent: number; created: number; seconds: number }> {
  const now = () => Number(process.hrtime.bigint()) / 1e6;
  const path = `${prefix}/passports`;
  const headers = { ...auth, "content-type": "application/json" };
  const t0 = now();
  let lastAnswer = t0;
  let sent = 0;
  let created = 0;
  const total = Math.round(c.rate * c.seconds);
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / c.rate;
    const wait = due - now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    sent++;
    inflight.push(
      send(agent, base, {
        method: "POST",
        path,
        headers,
        body: JSON.stringify(createBody(c.tag, i)),
        expect: 201,
      }).then(
        (a) => {
          if (a.status !== 201) return;
          created++;
          lastAnswer = now();
          answeredAt.set((JSON.parse(text(a)) as { id: string }).id, lastAnswer);
        },
        () => undefined,
      ),
    );
  }
  await Promise.all(inflight);
  return { sent, created, seconds: Math.max(c.seconds, (lastAnswer - t0) / 1000) };
}

/** Each passport's lag: from its create's 201 to its event being seen (the ones never seen are left out). */
function lagsOf(answeredAt: Map<string, number>, seenAt: Map<string, number>): number[] {
  const lagsMs: number[] = [];
  for (const [id, answered] of answeredAt) {
    const seen = seenAt.get(id);
    if (seen !== undefined) lagsMs.push(Math.max(0, seen - answered));
  }
  return lagsMs;
}

/**
 * Creates at a fixed rate (open loop: each create leaves on schedule whether or not earlier ones answered) while
 * a follower reads the feed from its current end in a tight loop, as an integrator following the feed does.
 * The lag of a passport: from the create's 201 arriving to the follower seeing its passport.created event.
 */
async function lag(c: Extract<LoadCommand, { type: "lag" }>): Promise<LagResult> {
  const base = new URL(c.target.baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const feedAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const prefix = `${base.pathname.replace(/\/$/, "")}/organizations/${encodeURIComponent(c.target.organization)}`;
  const auth = { authorization: `Bearer ${c.target.key}` };
  const now = () => Number(process.hrtime.bigint()) / 1e6;

  // The follower starts at the current end of the feed.
  let cursor: string | undefined;
  for (;;) {
    const q = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
    const a = await send(feedAgent, base, {
      method: "GET",
      path: `${prefix}/events?limit=100${q}`,
      headers: auth,
      expect: 200,
    });
    if (a.status !== 200) throw new Error(`feed read refused: ${a.status} ${text(a).slice(0, 300)}`);
    const page = listEnd(a.raw);
    cursor = page.next_cursor ?? cursor;
    if (!page.has_more) break;
  }

  const answeredAt = new Map<string, number>();
  const seenAt = new Map<string, number>();
  let sending = true;
  const follower = (async () => {
    let drainUntil = Infinity;
    for (;;) {
      if (!sending && drainUntil === Infinity) drainUntil = now() + c.drainSeconds * 1000;
      if (now() > drainUntil) return;
      if (!sending && seenAt.size >= answeredAt.size && [...answeredAt.keys()].every((id) => seenAt.has(id)))
        return;
      const q = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
      const a = await send(feedAgent, base, {
        method: "GET",
        path: `${prefix}/events?limit=100${q}`,
        headers: auth,
        expect: 200,
      });
      const at = now();
      if (a.status !== 200) continue;
      const page = JSON.parse(text(a)) as {
        data: { type: string; related?: { id?: string } }[];
        next_cursor: string | null;
      };
      for (const e of page.data)
        if (e.type === "passport.created" && e.related?.id && !seenAt.has(e.related.id))
          seenAt.set(e.related.id, at);
      cursor = page.next_cursor ?? cursor;
    }
  })();

  const { sent, created, seconds } = await createsAtRate(agent, base, prefix, auth, c, answeredAt);
  sending = false;
  await follower;
  agent.destroy();
  feedAgent.destroy();
  const lagsMs = lagsOf(answeredAt, seenAt);
  return { via: "feed", rate: c.rate, seconds, sent, created, seen: lagsMs.length, lagsMs };
}

/**
 * The delivery lag of pushed events: a receiver on loopback is registered as a webhook endpoint of the
 * organization (test mode allows http to loopback) for passport.created, creates leave at a fixed rate as in
 * `lag`, and the lag of a passport is from its create's 201 arriving to the receiver taking the delivery of its
 * passport.created (answered 204 at once; the signature is not checked here, the receiver's own cost is not
 * the platform's). The endpoint is deleted at the end. Deliveries of one endpoint are in feed order, one at a
 * time, so this is the lag an integrator's one endpoint sees.
 */
async function webhookLag(c: Extract<LoadCommand, { type: "lag" }>): Promise<LagResult> {
  const base = new URL(c.target.baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const prefix = `${base.pathname.replace(/\/$/, "")}/organizations/${encodeURIComponent(c.target.organization)}`;
  const auth = { authorization: `Bearer ${c.target.key}` };
  const now = () => Number(process.hrtime.bigint()) / 1e6;

  const answeredAt = new Map<string, number>();
  const seenAt = new Map<string, number>();
  let duplicates = 0;
  const receiver = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (d: Buffer) => parts.push(d));
    req.on("end", () => {
      const at = now();
      res.writeHead(204).end();
      try {
        const e = JSON.parse(Buffer.concat(parts).toString("utf8")) as {
          type?: string;
          related?: { id?: string };
        };
        const id = e.related?.id;
        if (e.type !== "passport.created" || !id) return;
        if (seenAt.has(id)) duplicates++;
        else seenAt.set(id, at);
      } catch {
        // not a delivery
      }
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const port = (receiver.address() as { port: number }).port;
  const made = await send(agent, base, {
    method: "POST",
    path: `${prefix}/webhooks`,
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ url: `http://127.0.0.1:${port}/bench`, types: ["passport.created"] }),
    expect: 201,
  });
  if (made.status !== 201)
    throw new Error(`webhook endpoint refused: ${made.status} ${text(made).slice(0, 300)}`);
  const endpointId = (JSON.parse(text(made)) as { id: string }).id;
  const { sent, created, seconds } = await createsAtRate(agent, base, prefix, auth, c, answeredAt);
  for (const until = now() + c.drainSeconds * 1000; now() < until;) {
    if ([...answeredAt.keys()].every((id) => seenAt.has(id))) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  await send(agent, base, {
    method: "DELETE",
    path: `${prefix}/webhooks/${endpointId}`,
    headers: auth,
    expect: 200,
  });
  await new Promise<void>((r) => receiver.close(() => r()));
  agent.destroy();
  const lagsMs = lagsOf(answeredAt, seenAt);
  return { via: "webhook", rate: c.rate, seconds, sent, created, seen: lagsMs.length, lagsMs, duplicates };
}

process.on("message", (msg: { id: number; command: LoadCommand }) => {
  const { id, command } = msg;
  const work =
    command.type === "run"
      ? run(command)
      : command.type === "create"
        ? create(command)
        : command.type === "rate"
          ? rate(command)
          : command.via === "webhook"
            ? webhookLag(command)
            : lag(command);
  work.then(
    (result) => process.send!({ id, result }),
    (err: Error) => process.send!({ id, error: err.stack ?? err.message }),
  );
});
process.on("disconnect", () => process.exit(0));
