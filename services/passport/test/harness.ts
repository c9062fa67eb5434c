/**
 * Runs the passport service in-process against its own test database and calls
 * it over gRPC with the kit client, as the gateway does. Nothing else runs: the
 * service is tested on its own.
 */
import { randomBytes } from "node:crypto";
import { sql, type Kysely } from "kysely";
import { ApiError } from "@dpp/contract";
import { type ClientOf, type RequestContext } from "@dpp/kit";
import { createDb } from "@dpp/kit/internal";
import { startServiceUnderTest, type TestDatabase, type UnderTest } from "@dpp/kit/testing";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { passportV1, timestampFromDate } from "@dpp/proto";
import { PASSPORT_SCHEMA, passportService, type PassportServiceOptions } from "../src/service";
import type { PassportDB } from "../src/store/schema";
import { gtinCheckDigit } from "@dpp/contract";

export interface Tenant {
  organizationId: string;
  livemode: boolean;
}

export const newOrg = () => `org_${randomBytes(6).toString("hex")}`;
export const testTenant = (organizationId = newOrg()): Tenant => ({ organizationId, livemode: false });
export const liveTenant = (organizationId = newOrg()): Tenant => ({ organizationId, livemode: true });

export const context = (t?: Tenant): RequestContext => ({
  requestId: `req_${randomBytes(6).toString("hex")}`,
  ...(t ?? {}),
});

/** A random GTIN-13 with a correct check digit. */
export function randomGtin13(): string {
  const body = `4${String(randomBytes(6).readUIntBE(0, 6) % 1e11).padStart(11, "0")}`;
  return `${body}${gtinCheckDigit(body)}`;
}

/** Everything a textile passport needs to be published: its name, a manufacturer, fibres, instructions, a GTIN. */
export const publishableTextile = (o: { productName?: string; gtin?: string } = {}) => ({
  product_name: o.productName ?? "Organic T-shirt",
  manufacturer_name: "Acme",
  manufacturer_address: "1 Rua, Porto",
  manufacturer_country: "PT",
  material_composition: [{ fiber: "cotton", percentage: 100 }],
  substances_of_concern: [],
  recycling_instructions: "Textile bank",
  care_instructions: "30 °C",
  gtin: o.gtin ?? randomGtin13(),
});

export type PassportClient = ClientOf<typeof passportV1.PassportService>;

export interface CreateBody {
  category: string;
  external_id?: string;
  data?: Record<string, unknown>;
}

/** The CreatePassportRequest the gateway sends for a body of that shape. */
export const createRequest = (body: CreateBody) => ({
  category: body.category,
  externalId: body.external_id,
  dataJson: body.data === undefined ? "" : JSON.stringify(body.data),
});

export type ListRequest = MessageInitShape<typeof passportV1.ListPassportsRequestSchema>;

/** A status enum value by its spec name, e.g. PASSPORT_STATUS_DRAFT → "draft". */
export const statusName = (s: passportV1.PassportStatus) =>
  String(passportV1.PassportStatus[s]).toLowerCase();

/** An RFC 3339 instant as the Timestamp the gateway sends. */
export const at = (text: string) => timestampFromDate(new Date(text));
type PassportUnderTest = UnderTest<ReturnType<typeof passportService>>;

export interface Harness {
  db: TestDatabase;
  service: PassportUnderTest;
  client: PassportClient;
  /** A query connection on the passport schema, to look at what a call stored. */
  sql: Kysely<PassportDB>;
  /** Creates from a body as the gateway has checked its shape: {category, external_id?, data?}. */
  create(t: Tenant, body: CreateBody): Promise<passportV1.Passport>;
  list(t: Tenant, req?: ListRequest): Promise<passportV1.ListPassportsResponse>;
  close(): Promise<void>;
}

export async function startHarness(label: string, options: PassportServiceOptions = {}): Promise<Harness> {
  const service = await startServiceUnderTest(passportService(options), {}, label);
  const db = service.database;
  const client = service.client(passportV1.PassportService);
  const query = createDb<PassportDB>({
    url: db.url,
    schema: PASSPORT_SCHEMA,
    applicationName: "passport-test",
    max: 2,
  });
  return {
    db,
    service,
    client,
    sql: query,
    create: async (t, body) => {
      const res = await client.createPassport(createRequest(body), { context: context(t) });
      return res.passport!;
    },
    list: (t, req = {}) => client.listPassports(req, { context: context(t) }),
    close: async () => {
      await query.destroy();
      await service.close();
    },
  };
}

/** Awaits a call that must fail and returns its ApiError. */
export async function refusal(call: Promise<unknown>): Promise<ApiError> {
  try {
    await call;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error("expected the call to be refused, but it succeeded");
}

/** Rows of the tenant in each table of the passport schema. */
export async function tenantRowCounts(h: Harness, t: Tenant) {
  const count = async (table: "passport" | "gtin_claim" | "outbox") => {
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}
      where organization_id = ${t.organizationId} and livemode = ${t.livemode}`.execute(h.sql);
    return rows[0]!.n;
  };
  return {
    passport: await count("passport"),
    gtin_claim: await count("gtin_claim"),
    outbox: await count("outbox"),
  };
}
