/**
 * The reference stack's second process: one gRPC server, one Postgres statement per read, one transaction
 * (the item row and an outbox row) per write. No validation, no idempotency, no events relay: the skeleton
 * every request of the real system also has, and nothing else.
 *
 *   REF_GRPC_ADDR=127.0.0.1:port DATABASE_URL=postgres://... node --import tsx tools/bench/reference/service.ts
 */
import { randomBytes } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import pg from "pg";
import {
  ITEMS_SERVICE,
  type CreateInput,
  type ItemKey,
  type PageQuery,
  type PatchInput,
  type RemovalInput,
  type Reply,
  type VariantsInput,
} from "./contract";
import { REFERENCE_SCHEMA } from "./schema";

const S = REFERENCE_SCHEMA;
// The services' pools hold at most 10 connections (the kit's createDb default): the same here.
const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: 10,
  application_name: "bench-reference",
});

interface ItemRow {
  id: string;
  organization_id: string;
  livemode: boolean;
  category: string;
  status: string;
  external_id: string | null;
  gtin: string | null;
  version: number;
  data: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
  published_at: Date | null;
}

/** The same fields as the real passport document, so both sides send documents of the same size. */
function itemJson(r: ItemRow): Record<string, unknown> {
  return {
    object: "passport",
    id: r.id,
    name: `organizations/${r.organization_id}/passports/${r.id}`,
    organization_id: r.organization_id,
    category: r.category,
    status: r.status,
    gtin: r.gtin,
    serial_number: null,
    external_id: r.external_id,
    version: r.version,
    livemode: r.livemode,
    registry_id: null,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
    published_at: r.published_at ? r.published_at.toISOString() : null,
    trashed_at: null,
    data: r.data,
  };
}

const ok = (status: number, body: unknown): Reply => ({ status, json: JSON.stringify(body) });
const notFound = (id: string): Reply =>
  ok(404, { error: { code: "resource_not_found", message: `No passport ${id}.` } });

/** An opaque cursor: the last key of the page. */
const encodeCursor = (v: string) => Buffer.from(v).toString("base64url");
const decodeCursor = (c: string | undefined) => (c ? Buffer.from(c, "base64url").toString() : undefined);

function page(data: unknown[], limit: number, lastKey: (i: number) => string): Record<string, unknown> {
  const hasMore = data.length > limit;
  const items = hasMore ? data.slice(0, limit) : data;
  return {
    object: "list",
    data: items,
    has_more: hasMore,
    next_cursor: items.length ? encodeCursor(lastKey(items.length - 1)) : null,
  };
}

async function inTransaction<T>(work: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  try {
    await c.query("begin");
    const out = await work(c);
    await c.query("commit");
    return out;
  } catch (err) {
    await c.query("rollback").catch(() => undefined);
    throw err;
  } finally {
    c.release();
  }
}

const outbox = (c: pg.PoolClient, org: string, type: string, row: ItemRow) =>
  c.query(`insert into ${S}.outbox (organization_id, type, payload) values ($1, $2, $3)`, [
    org,
    type,
    JSON.stringify(itemJson(row)),
  ]);

const handlers: Record<keyof typeof ITEMS_SERVICE, (req: any) => Promise<Reply>> = {
  async Get(k: ItemKey) {
    const { rows } = await pool.query<ItemRow>(
      `select * from ${S}.items where organization_id = $1 and livemode = $2 and id = $3`,
      [k.org, k.livemode, k.id],
    );
    return rows[0] ? ok(200, itemJson(rows[0])) : notFound(k.id);
  },
  async List(q: PageQuery) {
    const after = decodeCursor(q.cursor) ?? "";
    const { rows } = await pool.query<ItemRow>(
      `select * from ${S}.items where organization_id = $1 and livemode = $2 and id > $3 order by id limit $4`,
      [q.org, q.livemode, after, q.limit + 1],
    );
    const data = rows.map(itemJson);
    return ok(
      200,
      page(data, q.limit, (i) => rows[i]!.id),
    );
  },
  async Feed(q: PageQuery) {
    const after = Number(decodeCursor(q.cursor) ?? "0");
    const { rows } = await pool.query<{
      id: string;
      organization_id: string;
      livemode: boolean;
      seq: string;
      type: string;
      related: unknown;
      created_at: Date;
    }>(
      `select * from ${S}.events where organization_id = $1 and livemode = $2 and seq > $3 order by seq limit $4`,
      [q.org, q.livemode, after, q.limit + 1],
    );
    const data = rows.map((e) => ({
      object: "event",
      id: e.id,
      name: `organizations/${e.organization_id}/events/${e.id}`,
      organization_id: e.organization_id,
      type: e.type,
      livemode: e.livemode,
      created_at: e.created_at.toISOString(),
      related: e.related,
    }));
    return ok(
      200,
      page(data, q.limit, (i) => rows[i]!.seq),
    );
  },
  async Create(input: CreateInput) {
    const id = `ref_${randomBytes(12).toString("hex")}`;
    const data = input.body.data ?? {};
    const row = await inTransaction(async (c) => {
      const { rows } = await c.query<ItemRow>(
        `insert into ${S}.items (id, organization_id, livemode, category, external_id, gtin, data)
         values ($1, $2, $3, $4, $5, $6, $7) returning *`,
        [
          id,
          input.org,
          input.livemode,
          input.body.category,
          input.body.external_id ?? null,
          typeof data.gtin === "string" ? data.gtin : null,
          JSON.stringify(data),
        ],
      );
      await outbox(c, input.org, "passport.created", rows[0]!);
      return rows[0]!;
    });
    return ok(201, itemJson(row));
  },
  async Patch(p: PatchInput) {
    // RFC 7386 at the top level of `data`: keys set to null are removed, the others replaced.
    const removed = Object.keys(p.data).filter((k) => p.data[k] === null);
    const row = await inTransaction(async (c) => {
      const { rows } = await c.query<ItemRow>(
        `update ${S}.items set data = (data || $4::jsonb) - $5::text[], version = version + 1, updated_at = now()
         where organization_id = $1 and livemode = $2 and id = $3 returning *`,
        [p.org, p.livemode, p.id, JSON.stringify(p.data), removed],
      );
      if (rows[0]) await outbox(c, p.org, "passport.updated", rows[0]);
      return rows[0];
    });
    return row ? ok(200, itemJson(row)) : notFound(p.id);
  },
  async Publish(k: ItemKey) {
    const row = await inTransaction(async (c) => {
      const { rows } = await c.query<ItemRow>(
        `update ${S}.items set status = 'published', version = version + 1, updated_at = now(), published_at = now()
         where organization_id = $1 and livemode = $2 and id = $3 and status = 'draft' returning *`,
        [k.org, k.livemode, k.id],
      );
      if (rows[0]) await outbox(c, k.org, "passport.published", rows[0]);
      return rows[0];
    });
    return row
      ? ok(200, { ...itemJson(row), warnings: [] })
      : ok(409, { error: { code: "wrong_status", message: `Passport ${k.id} is not a draft.` } });
  },
  /** ONE multi-row INSERT of the batch (no validation, no GTIN claim, no events), answered in the API's shape. */
  async CreateVariants(v: VariantsInput) {
    const ids = v.variants.map(() => `ref_${randomBytes(12).toString("hex")}`);
    const { rows } = await pool.query<{
      id: string;
      gtin: string;
      size: string | null;
      colour: string | null;
      created_at: Date;
    }>(
      `insert into ${S}.variants (id, organization_id, livemode, passport_id, gtin, size, colour)
       select u.id, $1, $2, $3, u.gtin, u.size, u.colour
       from unnest($4::text[], $5::text[], $6::text[], $7::text[]) as u(id, gtin, size, colour)
       returning id, gtin, size, colour, created_at`,
      [
        v.org,
        v.livemode,
        v.passport,
        ids,
        v.variants.map((x) => x.gtin),
        v.variants.map((x) => x.size ?? null),
        v.variants.map((x) => x.colour ?? null),
      ],
    );
    const passport = `organizations/${v.org}/passports/${v.passport}`;
    return ok(201, {
      object: "list",
      data: rows.map((r) => ({
        object: "variant",
        id: r.id,
        name: `${passport}/variants/${r.id}`,
        organization_id: v.org,
        livemode: v.livemode,
        passport_id: v.passport,
        passport,
        gtin: r.gtin,
        size: r.size,
        colour: r.colour,
        created_at: r.created_at.toISOString(),
        agent_written: null,
      })),
      has_more: false,
      next_cursor: null,
    });
  },
  /** ONE multi-row DELETE of the GTINs; answers {removed, absent} in request order. */
  async RemoveVariants(r: RemovalInput) {
    const { rows } = await pool.query<{ gtin: string }>(
      `delete from ${S}.variants where organization_id = $1 and livemode = $2 and passport_id = $3
         and gtin = any($4::text[]) returning gtin`,
      [r.org, r.livemode, r.passport, r.gtins],
    );
    const removed = new Set(rows.map((x) => x.gtin));
    return ok(200, {
      removed: r.gtins.filter((g) => removed.has(g)),
      absent: r.gtins.filter((g) => !removed.has(g)),
    });
  },
};

const server = new grpc.Server();
const implementation: grpc.UntypedServiceImplementation = {};
for (const [name, handler] of Object.entries(handlers))
  implementation[name] = (
    call: grpc.ServerUnaryCall<unknown, Reply>,
    callback: grpc.sendUnaryData<Reply>,
  ) => {
    handler(call.request).then(
      (reply) => callback(null, reply),
      (err: Error) => callback({ code: grpc.status.INTERNAL, details: err.message }),
    );
  };
server.addService(ITEMS_SERVICE, implementation);
server.bindAsync(
  process.env.REF_GRPC_ADDR ?? "127.0.0.1:0",
  grpc.ServerCredentials.createInsecure(),
  (err, port) => {
    if (err) {
      console.error(err.message);
      process.exit(1);
    }
    console.log(`reference service listening on ${port}`);
  },
);

const stop = () => server.tryShutdown(() => void pool.end().then(() => process.exit(0)));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
