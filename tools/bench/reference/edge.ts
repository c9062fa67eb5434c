/**
 * The reference stack's HTTP edge: express, a bearer check (a SHA-256 digest compared in memory with the one
 * key it knows), JSON bodies, and ONE unary gRPC call to the reference service per request.
 *
 *   REF_HTTP_PORT=port REF_SERVICE_ADDR=127.0.0.1:port REF_KEY_DIGEST=<sha256 hex> REF_ORG=<organization id> \
 *     node --import tsx tools/bench/reference/edge.ts
 */
import { createHash, timingSafeEqual } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import express, { type Request, type Response } from "express";
import { ITEMS_SERVICE, type Method, type Reply } from "./contract";

const keyDigest = Buffer.from(process.env.REF_KEY_DIGEST ?? "", "hex");
const organization = process.env.REF_ORG ?? "";
const Client = grpc.makeGenericClientConstructor(ITEMS_SERVICE, "Items");
const client = new Client(
  process.env.REF_SERVICE_ADDR!,
  grpc.credentials.createInsecure(),
) as unknown as Record<
  Method,
  (req: unknown, cb: (err: grpc.ServiceError | null, reply?: Reply) => void) => void
>;

const app = express();
app.disable("x-powered-by");
app.disable("etag");
app.use(express.json({ limit: "1mb" }));

/** The caller's mode when its bearer key is the known key, else undefined. */
function authenticate(req: Request): boolean | undefined {
  const header = req.headers.authorization ?? "";
  if (!header.startsWith("Bearer ")) return undefined;
  const key = header.slice(7);
  const digest = createHash("sha256").update(key).digest();
  if (digest.length !== keyDigest.length || !timingSafeEqual(digest, keyDigest)) return undefined;
  return key.includes("_live_");
}

function call(method: Method, build: (req: Request, livemode: boolean) => unknown) {
  return (req: Request, res: Response) => {
    const livemode = authenticate(req);
    if (livemode === undefined) {
      res.status(401).json({ error: { code: "authentication_required", message: "Unknown key." } });
      return;
    }
    if (req.params.org !== organization) {
      res
        .status(404)
        .json({ error: { code: "organization_not_found_or_not_granted", message: "No access." } });
      return;
    }
    client[method](build(req, livemode), (err, reply) => {
      if (err || !reply) {
        res.status(500).json({ error: { code: "internal_error", message: err?.message ?? "no reply" } });
        return;
      }
      res.status(reply.status).type("application/json").send(reply.json);
    });
  };
}

const limitOf = (req: Request, fallback: number) =>
  Math.min(Number(req.query.limit ?? fallback) || fallback, 100);
const cursorOf = (req: Request) => (typeof req.query.cursor === "string" ? req.query.cursor : undefined);
const org = "/v1/organizations/:org";

app.get(
  `${org}/passports/:id`,
  call("Get", (req, livemode) => ({ org: req.params.org, livemode, id: req.params.id })),
);
app.get(
  `${org}/passports`,
  call("List", (req, livemode) => ({
    org: req.params.org,
    livemode,
    limit: limitOf(req, 20),
    cursor: cursorOf(req),
  })),
);
app.get(
  `${org}/events`,
  call("Feed", (req, livemode) => ({
    org: req.params.org,
    livemode,
    limit: limitOf(req, 100),
    cursor: cursorOf(req),
  })),
);
// The Idempotency-Key header is ignored: the reference is the skeleton without it.
app.post(
  `${org}/passports`,
  call("Create", (req, livemode) => ({ org: req.params.org, livemode, body: req.body })),
);
app.patch(
  `${org}/passports/:id`,
  call("Patch", (req, livemode) => ({
    org: req.params.org,
    livemode,
    id: req.params.id,
    data: req.body?.data ?? {},
  })),
);
app.post(
  `${org}/passports/:id/publish`,
  call("Publish", (req, livemode) => ({ org: req.params.org, livemode, id: req.params.id })),
);
// A batch of variants and a removal by GTINs: each ONE gRPC call, whatever the number of rows.
app.post(
  `${org}/passports/:id/variants`,
  call("CreateVariants", (req, livemode) => ({
    org: req.params.org,
    livemode,
    passport: req.params.id,
    variants: req.body?.variants ?? [],
  })),
);
app.post(
  `${org}/passports/:id/variants/remove`,
  call("RemoveVariants", (req, livemode) => ({
    org: req.params.org,
    livemode,
    passport: req.params.id,
    gtins: req.body?.gtins ?? [],
  })),
);
app.get("/readyz", (_req, res) => {
  res.json({ ok: true });
});

const server = app.listen(Number(process.env.REF_HTTP_PORT ?? 0), "127.0.0.1", () => {
  console.log(`reference edge listening on ${JSON.stringify(server.address())}`);
});
server.keepAliveTimeout = 65000;

const stop = () => {
  server.close(() => {
    (client as unknown as grpc.Client).close();
    process.exit(0);
  });
  server.closeAllConnections();
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
