// The files of a new service, as `npm run svc:new -- <name>` writes them (tools/svc-new.mjs). Each template
// is a function of the names below; the result is formatted by prettier before it is written.
//
//   n.name      variants-units   the registry name, folder, jest project, chart component
//   n.schema    variants_units   its Postgres schema (and proto package word)
//   n.NAME      VARIANTS_UNITS   its variables' prefix
//   n.Pascal    VariantsUnits    its proto service (VariantsUnitsService) and definition (variantsUnitsService)
//   n.camel     variantsUnits
//   n.ns        variantsUnitsV1  its namespace in @dpp/proto
//   n.plural    variants-units   its collection's path segment (/organizations/{organization}/<plural>)
//   n.one       variants_unit    its resource (table, `object`), n.One its message (VariantsUnit)
//   n.Ones      VariantsUnits    its list RPC (ListVariantsUnits), n.ones its list field
//   n.readScope, n.writeScope    the key scopes of its two routes
//   n.port      50057
export const files = (n) => ({
  [`services/${n.name}/proto/dpp/${n.schema}/v1/${n.schema}_service.proto`]: proto(n),
  [`services/${n.name}/package.json`]: packageJson(n),
  [`services/${n.name}/tsconfig.json`]: `{ "extends": "../../tsconfig.base.json", "include": ["src", "test", "migrations", "gateway"] }\n`,
  [`services/${n.name}/README.md`]: readme(n),
  [`services/${n.name}/openapi.yaml`]: openapi(n),
  [`services/${n.name}/src/main.ts`]: main(n),
  [`services/${n.name}/src/tracing.ts`]: tracing(n),
  [`services/${n.name}/src/config.ts`]: config(n),
  [`services/${n.name}/src/index.ts`]: `export { ${n.camel}Service } from "./service";\nexport { ${n.camel}Env } from "./config";\n`,
  [`services/${n.name}/src/service.ts`]: service(n),
  [`services/${n.name}/src/domain/${n.one}.ts`]: domain(n),
  [`services/${n.name}/src/domain/${n.one}.test.ts`]: domainTest(n),
  [`services/${n.name}/src/store/schema.ts`]: schema(n),
  [`services/${n.name}/src/store/store.ts`]: store(n),
  [`services/${n.name}/src/rpc/${n.name}.rpc.ts`]: rpc(n),
  [`services/${n.name}/migrations/0001_init.ts`]: migration(n),
  [`services/${n.name}/migrations/index.ts`]: `import type { Migration } from "kysely";\nimport * as m0001 from "./0001_init";\n\nexport const migrations: Record<string, Migration> = {\n  "0001_init": m0001,\n};\n`,
  [`services/${n.name}/test/harness.ts`]: harness(n),
  [`services/${n.name}/test/integration/trust-boundary.int.test.ts`]: trust(n),
  [`services/${n.name}/test/integration/${n.name}.int.test.ts`]: integration(n),
  [`services/${n.name}/gateway/module.ts`]: gatewayModule(n),
  [`services/${n.name}/gateway/authz.json`]:
    JSON.stringify({ [`create${n.One}`]: { body: { label: "authz" } } }, null, 2) + "\n",
});

const proto = (n) => `syntax = "proto3";

package dpp.${n.schema}.v1;

import "google/protobuf/timestamp.proto";

// The ${n.name} service: the ${n.plural} of one organization and mode. Refusals travel as the kit's ApiError.
service ${n.Pascal}Service {
  // Creates a ${n.one}; under an Idempotency-Key (the gateway's), it runs once per key.
  rpc Create${n.One}(Create${n.One}Request) returns (Create${n.One}Response);
  // Lists the tenant's ${n.plural}, newest first, a page at a time.
  rpc List${n.Ones}(List${n.Ones}Request) returns (List${n.Ones}Response);
}

message ${n.One} {
  string id = 1;
  string organization_id = 2;
  bool livemode = 3;
  string label = 4;
  google.protobuf.Timestamp created_at = 5;
}

message Create${n.One}Request {
  string label = 1;
}

message Create${n.One}Response {
  ${n.One} ${n.one} = 1;
}

message List${n.Ones}Request {
  // 1..100; 0 means the default (20).
  int32 limit = 1;
  // next_cursor of the previous page; empty for the first.
  string cursor = 2;
}

message List${n.Ones}Response {
  repeated ${n.One} ${n.ones} = 1;
  bool has_more = 2;
  // Empty on the last page.
  string next_cursor = 3;
}
`;

const packageJson = (n) =>
  JSON.stringify(
    {
      name: `@dpp/${n.name}`,
      version: "0.1.0",
      private: true,
      type: "commonjs",
      main: "src/index.ts",
      types: "src/index.ts",
      dependencies: {
        "@dpp/contract": "workspace:*",
        "@dpp/gateway": "workspace:*",
        "@dpp/kit": "workspace:*",
        "@dpp/proto": "workspace:*",
        "@bufbuild/protobuf": "2.13.0",
        kysely: "0.28.18",
        zod: "4.6.7",
      },
      exports: { ".": "./src/index.ts" },
    },
    null,
    2,
  ) + "\n";

const readme = (n) => `# ${n.name}

Made by \`npm run svc:new -- ${n.name}\` (docs/adding-a-service.md). Say here what it is for.

- **Schema owned:** \`${n.schema}\`: \`${n.one}\` (one row per ${n.one}, by organization and mode), \`idempotency\`
  (the results of keyed writes, the kit's) and \`outbox\` (its events, the kit's relay publishes them).
- **RPCs served:** \`dpp.${n.schema}.v1.${n.Pascal}Service\`: \`Create${n.One}\` (keyed), \`List${n.Ones}\`.
- **Events:** none yet (docs/adding-a-service.md, "Events").
- **Calls:** nothing.
- **Fronted by the gateway:** \`gateway/module.ts\`: \`GET\` and \`POST /v1/organizations/{organization}/${n.plural}\`
  (\`${n.readScope}\`, \`${n.writeScope}\`), documented in \`openapi.yaml\`.
- **Variables:** the kit's (\`DATABASE_URL\`, \`GRPC_ADDR\` (default \`0.0.0.0:${n.port}\`), ...) and its own in
  \`src/config.ts\`.
`;

const main = (n) => `/**
 *   node --import tsx services/${n.name}/src/main.ts migrate   (schema \`${n.schema}\`, then exit)
 *   node --import tsx services/${n.name}/src/main.ts serve     (the default; runs until stopped)
 */
import "./tracing";
import { runService } from "@dpp/kit";
import { ${n.camel}Service } from "./service";

runService(${n.camel}Service);
`;

const tracing = (n) => `import { startTracing } from "@dpp/kit/tracing";

// The first import of main.ts: instrumentation must patch modules before they load.
startTracing("${n.name}");
`;

const config = (n) => `import { z } from "zod";

/** The ${n.name} service's own variables (the common ones come from the kit's service template). */
export const ${n.camel}Env = {
  /** Longest label accepted. */
  ${n.NAME}_LABEL_MAX_LENGTH: z.coerce.number().int().min(1).max(10_000).default(200),
};
`;

const service = (
  n,
) => `/** The ${n.name} service on the kit's service template: its store and its rpc handlers. */
import { defineService, type ServiceRuntime } from "@dpp/kit";
import { ${n.ns} } from "@dpp/proto";
import { migrations } from "../migrations";
import { ${n.camel}Env } from "./config";
import { ${n.camel}Rpc } from "./rpc/${n.name}.rpc";
import { ${n.Pascal}Store } from "./store/store";
import { ${n.NAME}_SCHEMA, type ${n.Pascal}DB } from "./store/schema";

export const ${n.camel}Service = defineService({
  name: "${n.name}",
  schema: ${n.NAME}_SCHEMA,
  migrations,
  env: ${n.camel}Env,
  grpcPort: ${n.port},
  outbox: true,
  idempotency: true,
  start: (rt: ServiceRuntime<typeof ${n.camel}Env, ${n.Pascal}DB>) => {
    const store = new ${n.Pascal}Store(rt.db);
    rt.serve(${n.ns}.${n.Pascal}Service, ${n.camel}Rpc(store, { labelMaxLength: rt.config.${n.NAME}_LABEL_MAX_LENGTH }));
    return { store };
  },
});
`;

const domain = (n) => `/** The rules of a ${n.one}: what a create may hold. No SQL, no gRPC. */
import { ApiError, type Issue } from "@dpp/contract";

/** The label of a create, trimmed; validation_failed naming /label when it is empty or too long. */
export function checkLabel(label: string, maxLength: number): string {
  const text = label.trim();
  const issues: Issue[] = [];
  if (text === "") issues.push({ source: { pointer: "/label" }, rule: "required", message: "label is required." });
  else if (text.length > maxLength)
    issues.push({ source: { pointer: "/label" }, rule: "max_length", message: \`label is longer than \${maxLength}.\` });
  if (issues.length) throw new ApiError("validation_failed", "The ${n.one} cannot be created.", { issues });
  return text;
}
`;

const domainTest = (n) => `import { checkLabel } from "./${n.one}";

describe("checkLabel", () => {
  it("keeps a label, trimmed", () => {
    expect(checkLabel("  first  ", 10)).toBe("first");
  });

  it("refuses an empty or too long label, naming /label", () => {
    expect(() => checkLabel(" ", 10)).toThrow(expect.objectContaining({ code: "validation_failed" }));
    expect(() => checkLabel("x".repeat(11), 10)).toThrow(
      expect.objectContaining({ details: { issues: [expect.objectContaining({ rule: "max_length" })] } }),
    );
  });
});
`;

const schema = (n) => `/** The ${n.schema} schema: its tables as kysely types (this service's only). */
import type { Generated } from "kysely";
import type { OutboxTable, WithIdempotency } from "@dpp/kit";

export const ${n.NAME}_SCHEMA = "${n.schema}";

export interface ${n.One}Table {
  id: string;
  organization_id: string;
  livemode: boolean;
  label: string;
  created_at: Generated<Date>;
}

export interface ${n.Pascal}DB extends WithIdempotency {
  ${n.one}: ${n.One}Table;
  outbox: OutboxTable;
}
`;

const store = (n) => `/**
 * Every query of the ${n.name} service. Each filters organization_id and livemode; each write goes through
 * the kit's singleStatement or transaction with the call's context, so that a keyed call's write commits with
 * its idempotency record.
 */
import type { Kysely, Selectable } from "kysely";
import { newId } from "@dpp/contract";
import { singleStatement, type TenantContext } from "@dpp/kit";
import type { ${n.One}Table, ${n.Pascal}DB } from "./schema";

export type ${n.One}Row = Selectable<${n.One}Table>;

export class ${n.Pascal}Store {
  constructor(readonly db: Kysely<${n.Pascal}DB>) {}

  create(t: TenantContext, label: string): Promise<${n.One}Row> {
    return singleStatement(this.db, t, (q) =>
      q
        .insertInto("${n.one}")
        .values({ id: newId("${n.idPrefix}"), organization_id: t.organizationId, livemode: t.livemode, label })
        .returningAll()
        .executeTakeFirstOrThrow(),
    );
  }

  /** Newest first: \`fetch\` rows after the id \`afterId\` (the kit's page() reads limit + 1). */
  list(t: TenantContext, fetch: number, afterId: string | undefined): Promise<${n.One}Row[]> {
    let q = this.db
      .selectFrom("${n.one}")
      .selectAll()
      .where("organization_id", "=", t.organizationId)
      .where("livemode", "=", t.livemode);
    if (afterId !== undefined) q = q.where("id", "<", afterId);
    return q.orderBy("id", "desc").limit(fetch).execute();
  }
}
`;

const rpc = (
  n,
) => `/** ${n.Pascal}Service: thin handlers; the rules live in ../domain, the queries in ../store. */
import { ApiError } from "@dpp/contract";
import { decodeCursor, page, pageLimit, requireTenant, type ImplOf } from "@dpp/kit";
import { timestampFromDate, type ${n.ns} } from "@dpp/proto";
import { checkLabel } from "../domain/${n.one}";
import type { ${n.One}Row, ${n.Pascal}Store } from "../store/store";

/** The list's name in its cursors. */
const LIST = "${n.plural}";

const message = (r: ${n.One}Row) => ({
  id: r.id,
  organizationId: r.organization_id,
  livemode: r.livemode,
  label: r.label,
  createdAt: timestampFromDate(r.created_at),
});

export function ${n.camel}Rpc(
  store: ${n.Pascal}Store,
  o: { labelMaxLength: number },
): ImplOf<typeof ${n.ns}.${n.Pascal}Service> {
  return {
    create${n.One}: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      const label = checkLabel(req.label, o.labelMaxLength);
      return { ${n.one}: message(await store.create(t, label)) };
    },

    list${n.Ones}: async (req, { ctx }) => {
      const t = requireTenant(ctx);
      const limit = pageLimit(req.limit);
      const after = decodeCursor<unknown>(LIST, {}, req.cursor);
      if (after !== undefined && typeof after !== "string")
        throw new ApiError("cursor_invalid", "The cursor is malformed; pass next_cursor exactly as received.");
      const p = page(await store.list(t, limit + 1, after), limit, { list: LIST, filters: {}, position: (r) => r.id });
      return { ${n.ones}: p.rows.map(message), hasMore: p.hasMore, nextCursor: p.nextCursor };
    },
  };
}
`;

const migration = (n) => `import { sql, type Kysely } from "kysely";

/**
 * The ${n.one} table. The kit's tables (keyed writes' results, events) are made by the template's migrate from the
 * definition's \`idempotency\` and \`outbox\`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("${n.one}")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("livemode", "boolean", (c) => c.notNull())
    .addColumn("label", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql\`now()\`))
    .execute();
  await db.schema
    .createIndex("${n.one}_tenant_id_idx")
    .on("${n.one}")
    .columns(["organization_id", "livemode", "id desc"])
    .execute();
}
`;

const harness = (n) => `/**
 * Runs the ${n.name} service in-process on its own test database and calls it over gRPC with the kit's client,
 * as the gateway does.
 */
import { sql, type Kysely } from "kysely";
import { type ClientOf } from "@dpp/kit";
import { createDb } from "@dpp/kit/internal";
import { startServiceUnderTest, type Tenant, type UnderTest } from "@dpp/kit/testing";
import { ${n.ns} } from "@dpp/proto";
import { ${n.camel}Service } from "../src/service";
import { ${n.NAME}_SCHEMA, type ${n.Pascal}DB } from "../src/store/schema";

export type ${n.Pascal}Client = ClientOf<typeof ${n.ns}.${n.Pascal}Service>;

export interface Harness {
  service: UnderTest<typeof ${n.camel}Service>;
  client: ${n.Pascal}Client;
  /** A connection on the service's schema, to look at what a call stored. */
  sql: Kysely<${n.Pascal}DB>;
  /** The tenant's rows in each of the service's tables. */
  rowCounts(t: Tenant): Promise<Record<string, number>>;
  close(): Promise<void>;
}

export async function startHarness(label: string): Promise<Harness> {
  const service = await startServiceUnderTest(${n.camel}Service, {}, label);
  const query = createDb<${n.Pascal}DB>({
    url: service.database.url,
    schema: ${n.NAME}_SCHEMA,
    applicationName: "${n.name}-test",
    max: 2,
  });
  return {
    service,
    client: service.client(${n.ns}.${n.Pascal}Service),
    sql: query,
    rowCounts: async (t) => {
      const counts: Record<string, number> = {};
      for (const table of ["${n.one}", "idempotency", "outbox"]) {
        const { rows } = await sql<{ n: number }>\`select count(*)::int as n from \${sql.table(table)}
          where organization_id = \${t.organizationId} and livemode = \${t.livemode}\`.execute(query);
        counts[table] = rows[0]!.n;
      }
      return counts;
    },
    close: async () => {
      await query.destroy();
      await service.close();
    },
  };
}
`;

const trust = (
  n,
) => `/** The ${n.name} service as an attacker on its network would reach it (the kit's trust-boundary suite). */
import { describeTrustBoundary, newTenant } from "@dpp/kit/testing";
import { ${n.ns} } from "@dpp/proto";
import { startHarness, type Harness } from "../harness";

let h: Harness;
const victim = newTenant();

beforeAll(async () => {
  h = await startHarness("${n.schema}_trust");
});
afterAll(async () => {
  await h?.close();
});

describeTrustBoundary(${n.ns}.${n.Pascal}Service, {
  under: () => h.service,
  tenant: () => victim,
  calls: [
    { method: "list${n.Ones}", request: () => ({}) },
    { method: "create${n.One}", request: () => ({ label: "forged" }) },
  ],
  snapshot: () => h.rowCounts(victim),
});
`;

const integration = (n) => `/** ${n.Pascal}Service over gRPC: create (keyed) and list, each tenant's own. */
import { keyedContext, newTenant, tenantContext } from "@dpp/kit/testing";
import { startHarness, type Harness } from "../harness";

let h: Harness;

beforeAll(async () => {
  h = await startHarness("${n.schema}");
});
afterAll(async () => {
  await h?.close();
});

it("creates ${n.plural} and lists them newest first, a page at a time, the tenant's only", async () => {
  const t = newTenant();
  for (const label of ["one", "two", "three"])
    await h.client.create${n.One}({ label }, { context: tenantContext(t) });
  await h.client.create${n.One}({ label: "elsewhere" }, { context: tenantContext() });
  const first = await h.client.list${n.Ones}({ limit: 2 }, { context: tenantContext(t) });
  expect(first.${n.ones}.map((x) => x.label)).toEqual(["three", "two"]);
  expect(first.hasMore).toBe(true);
  const second = await h.client.list${n.Ones}({ limit: 2, cursor: first.nextCursor }, { context: tenantContext(t) });
  expect(second.${n.ones}.map((x) => x.label)).toEqual(["one"]);
  expect([second.hasMore, second.nextCursor]).toEqual([false, ""]);
});

it("answers a create again under the same Idempotency-Key without writing twice", async () => {
  const t = newTenant();
  const ctx = () => keyedContext(t, { key: "k1", request: { label: "once" } });
  const a = await h.client.create${n.One}({ label: "once" }, { context: ctx() });
  const b = await h.client.create${n.One}({ label: "once" }, { context: ctx() });
  expect(b.${n.one}!.id).toBe(a.${n.one}!.id);
  expect((await h.rowCounts(t)).${n.one}).toBe(1);
});

it("refuses an empty label and a foreign cursor", async () => {
  await expect(h.client.create${n.One}({ label: " " }, { context: tenantContext() })).rejects.toBeRefusedWith(
    "validation_failed",
    { issues: [expect.objectContaining({ source: { pointer: "/label" }, rule: "required" })] },
  );
  await expect(
    h.client.list${n.Ones}({ cursor: "not-a-cursor!" }, { context: tenantContext() }),
  ).rejects.toBeRefusedWith("cursor_invalid");
});
`;

const gatewayModule = (n) => `/**
 * The gateway's routes of the ${n.name} service (this file runs in the gateway: it is listed by
 * services/gateway/src/modules/index.generated.ts). Each handler reads the request, calls one method and maps
 * the answer to the public JSON of openapi.yaml.
 */
import { ApiError } from "@dpp/contract";
import { parseLimit, type ClientOf } from "@dpp/kit";
import type { ${n.ns} } from "@dpp/proto";
import {
  bodyObject,
  KiB,
  list,
  rfc3339,
  single,
  unknownMembers,
  type GatewayModule,
  type ModuleFactory,
} from "@dpp/gateway/modules";

export type ${n.Pascal}Client = ClientOf<typeof ${n.ns}.${n.Pascal}Service>;

export const ${n.camel}Json = (x: ${n.ns}.${n.One}) => ({
  object: "${n.one}" as const,
  id: x.id,
  name: \`organizations/\${x.organizationId}/${n.plural}/\${x.id}\`,
  livemode: x.livemode,
  label: x.label,
  created_at: rfc3339(x.createdAt),
});

export function ${n.camel}Module(deps: { client: ${n.Pascal}Client }): GatewayModule {
  const { client } = deps;
  return {
    name: "${n.name}",
    routes: [
      {
        operationId: "list${n.Ones}",
        method: "GET",
        path: "/organizations/{organization}/${n.plural}",
        auth: "organization",
        scope: "${n.readScope}",
        idempotent: false,
        successStatus: 200,
        query: { limit: "single", cursor: "single" },
        handler: async ({ ctx, query }) => {
          const res = await client.list${n.Ones}(
            { limit: parseLimit(single(query, "limit")), cursor: single(query, "cursor") },
            { context: ctx },
          );
          return { body: list(res.${n.ones}.map(${n.camel}Json), res.hasMore, res.nextCursor || null) };
        },
      },
      {
        operationId: "create${n.One}",
        method: "POST",
        path: "/organizations/{organization}/${n.plural}",
        auth: "organization",
        scope: "${n.writeScope}",
        idempotent: true,
        bodyLimitBytes: 4 * KiB,
        successStatus: 201,
        handler: async ({ ctx, body }) => {
          const b = bodyObject(body);
          const issues = unknownMembers(b, ["label"]);
          if (b.label !== undefined && typeof b.label !== "string")
            issues.push({ source: { pointer: "/label" }, rule: "type", message: "label must be a string." });
          if (issues.length) throw new ApiError("validation_failed", "The ${n.one} cannot be created.", { issues });
          const res = await client.create${n.One}({ label: (b.label as string | undefined) ?? "" }, { context: ctx });
          return { body: ${n.camel}Json(res.${n.one}!) };
        },
      },
    ],
  };
}

/** The module in the gateway's module list. */
export const fromDeps: ModuleFactory = (deps) => ${n.camel}Module({ client: deps.${n.clientKey} });
`;

const openapi = (n) => `# The ${n.name} service's operations in the API, bundled into the served document by
# tools/gen-openapi.mjs (run \`npm run -s gen:openapi\`). Its standard error answers (400, 401, 403, 404, 409,
# 413, 415, 422, 429, 500) and the Request-Id header of each answer are added there; write what is particular
# to each operation. Components of openapi.yaml are referenced as they are (#/components/...).
tags:
  - name: ${n.Title}
    description: The ${n.plural} of one organization and mode.
paths:
  /organizations/{organization}/${n.plural}:
    parameters:
      - $ref: "#/components/parameters/Organization"
    get:
      operationId: list${n.Ones}
      tags: [${n.Title}]
      summary: List ${n.plural}
      description: The ${n.plural} of the organization in the key's mode, newest first.
      security:
        - bearerAuth: [${n.readScope}]
      parameters:
        - $ref: "#/components/parameters/Limit"
        - $ref: "#/components/parameters/Cursor"
      responses:
        "200":
          description: A page of ${n.plural}.
          content:
            application/json:
              schema:
                $ref: "#/components/schemas/${n.One}List"
    post:
      operationId: create${n.One}
      tags: [${n.Title}]
      summary: Create a ${n.one}
      description: |
        Creates a ${n.one}. \`label\` is required (1 to 200 characters after trimming), else 422
        \`validation_failed\`. Body limit: 4 KiB (4096 bytes).
      security:
        - bearerAuth: [${n.writeScope}]
      x-body-limit-bytes: 4096
      parameters:
        - $ref: "#/components/parameters/IdempotencyKey"
      requestBody:
        required: true
        content:
          application/json:
            schema:
              $ref: "#/components/schemas/Create${n.One}Request"
      responses:
        "201":
          description: The new ${n.one}.
          headers:
            Idempotent-Replayed:
              $ref: "#/components/headers/IdempotentReplayed"
          content:
            application/json:
              schema:
                $ref: "#/components/schemas/${n.One}"
components:
  schemas:
    ${n.One}:
      type: object
      required: [object, id, name, livemode, label, created_at]
      properties:
        object:
          type: string
          const: ${n.one}
        id:
          $ref: "#/components/schemas/Identifier"
        name:
          type: string
          description: organizations/<organization_id>/${n.plural}/<id>
        livemode:
          type: boolean
        label:
          type: string
        created_at:
          $ref: "#/components/schemas/Timestamp"
    ${n.One}List:
      allOf:
        - $ref: "#/components/schemas/List"
        - type: object
          required: [data]
          properties:
            data:
              type: array
              items:
                $ref: "#/components/schemas/${n.One}"
    Create${n.One}Request:
      type: object
      additionalProperties: false
      required: [label]
      properties:
        label:
          type: string
          minLength: 1
          maxLength: 200
`;
