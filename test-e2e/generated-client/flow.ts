/**
 * An integrator's flow written against a client generated from the served OpenAPI document
 * (openapi-typescript types, openapi-fetch calls), with no casts: create a textile passport,
 * read it, patch it with Expected-Version, handle a refusal by its code, publish it, list with
 * a cursor and read the event feed. generated-client.e2e.test.ts type-checks this file against
 * freshly generated types, then runs it against the stack.
 */
import createClient from "openapi-fetch";
import type { components, paths } from "./api";

type ErrorCode = components["schemas"]["ErrorCode"];

export interface FlowResult {
  id: string;
  createdVersion: number;
  createdStatus: string;
  readName: string | undefined;
  patchedVersion: number;
  refusal: { code: ErrorCode; currentVersion: number | undefined; requestId: string };
  publishedStatus: string;
  warnings: string[];
  listed: string[];
  listPages: number;
  feedTypes: string[];
  feedCursor: string;
}

export async function integratorFlow(
  baseUrl: string,
  apiKey: string,
  organization: string,
): Promise<FlowResult> {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${apiKey}` } });
  const run = `flow-${Date.now()}`;

  const created = await client.POST("/organizations/{organization}/passports", {
    params: { path: { organization }, header: { "Idempotency-Key": `${run}-create` } },
    body: {
      category: "textile",
      external_id: run,
      data: {
        product_name: "Organic T-shirt",
        manufacturer_name: "Acme Textiles",
        manufacturer_address: "1 Rua das Flores, Porto",
        manufacturer_country: "PT",
        material_composition: [
          { fiber: "cotton", percentage: 95 },
          { fiber: "elastane", percentage: 5 },
        ],
        substances_of_concern: [],
        recycling_instructions: "Bring to a textile collection point.",
        care_instructions: "Wash at 30 °C.",
        gtin: "4006381333931",
      },
    },
  });
  if (!created.data) throw new Error(`create refused: ${JSON.stringify(created.error)}`);
  const id = created.data.id;
  const path = { organization, id };

  const read = await client.GET("/organizations/{organization}/passports/{id}", { params: { path } });
  if (!read.data) throw new Error(`get refused: ${JSON.stringify(read.error)}`);
  // Categories are an open set: a passport may be of one this client does not know, whose data is
  // an open object. So the value is checked, as any value of an open object.
  const name = read.data.data.product_name;
  const readName = typeof name === "string" ? name : undefined;

  const patched = await client.PATCH("/organizations/{organization}/passports/{id}", {
    params: { path, header: { "Expected-Version": read.data.version, "Idempotency-Key": `${run}-patch` } },
    body: { data: { product_name: "Organic T-shirt, relaxed fit", product_description: null } },
  });
  if (!patched.data) throw new Error(`patch refused: ${JSON.stringify(patched.error)}`);

  // The same version again is stale now: the refusal is handled by its code.
  const stale = await client.PATCH("/organizations/{organization}/passports/{id}", {
    params: { path, header: { "Expected-Version": read.data.version, "Idempotency-Key": `${run}-stale` } },
    body: { data: { product_name: "Lost update" } },
  });
  if (!stale.error) throw new Error("a stale Expected-Version was accepted");
  let currentVersion: number | undefined;
  switch (stale.error.error.code) {
    case "precondition_failed":
      currentVersion = stale.error.error.details.current_version;
      break;
    default:
      throw new Error(`unexpected refusal ${stale.error.error.code}`);
  }

  const published = await client.POST("/organizations/{organization}/passports/{id}/publish", {
    params: {
      path,
      header: { "Expected-Version": patched.data.version, "Idempotency-Key": `${run}-publish` },
    },
    body: {},
  });
  if (!published.data) throw new Error(`publish refused: ${JSON.stringify(published.error)}`);
  if ("error" in published.data) throw new Error(`publish waits for approval: ${published.data.error.code}`);
  const publishedStatus = published.data.status;
  const warnings = published.data.warnings.map((w) => w.code);

  // A second passport, then the list in pages of one, following next_cursor.
  const second = await client.POST("/organizations/{organization}/passports", {
    params: { path: { organization }, header: { "Idempotency-Key": `${run}-second` } },
    body: { category: "general", data: { product_name: "Tote bag" } },
  });
  if (!second.data) throw new Error(`create refused: ${JSON.stringify(second.error)}`);
  const listed: string[] = [];
  let listPages = 0;
  let cursor: string | undefined;
  for (;;) {
    const page = await client.GET("/organizations/{organization}/passports", {
      params: { path: { organization }, query: { limit: 1, ...(cursor ? { cursor } : {}) } },
    });
    if (!page.data) throw new Error(`list refused: ${JSON.stringify(page.error)}`);
    listPages++;
    listed.push(...page.data.data.map((p) => p.id));
    if (!page.data.has_more || page.data.next_cursor === null) break;
    cursor = page.data.next_cursor;
  }

  // The feed of this passport's events, read to its end.
  const feedTypes: string[] = [];
  let feedCursor: string | undefined;
  for (;;) {
    const page = await client.GET("/organizations/{organization}/events", {
      params: {
        path: { organization },
        query: { limit: 100, ...(feedCursor ? { cursor: feedCursor } : {}) },
      },
    });
    if (!page.data) throw new Error(`feed refused: ${JSON.stringify(page.error)}`);
    for (const event of page.data.data)
      if (event.related.object === "passport" && event.related.id === id) feedTypes.push(event.type);
    feedCursor = page.data.next_cursor;
    if (!page.data.has_more) break;
  }

  return {
    id,
    createdVersion: created.data.version,
    createdStatus: created.data.status,
    readName,
    patchedVersion: patched.data.version,
    refusal: { code: stale.error.error.code, currentVersion, requestId: stale.error.error.request_id },
    publishedStatus,
    warnings,
    listed,
    listPages,
    feedTypes,
    feedCursor,
  };
}
