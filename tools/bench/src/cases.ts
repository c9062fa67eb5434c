/**
 * The measured cases: what one request of each is, the same for the full system and the reference (same paths,
 * headers and bodies; only the base URL and the ids differ).
 */
export const CASES = [
  "get",
  "list",
  "feed",
  "create",
  "create_idem",
  "patch",
  "publish",
  "resolve",
  "page",
] as const;
export type CaseName = (typeof CASES)[number];

export const CASE_TITLES: Record<CaseName, string> = {
  get: "GET one passport",
  list: "list passports (limit 20, following next_cursor)",
  feed: "feed page (limit 100, following next_cursor)",
  create: "create a textile passport",
  create_idem: "create with an Idempotency-Key",
  patch: "PATCH data (merge patch)",
  publish: "publish a draft",
  resolve: "scan: GS1 Digital Link /01/{gtin} → 307 (public surface)",
  page: "public passport page /p/{id}, HTML (public surface)",
};

/** The cases of the public surface: no key, sent to Target.publicBaseUrl. */
export const PUBLIC_CASES: ReadonlySet<CaseName> = new Set(["resolve", "page"]);

/** The headers of a phone's browser asking for a page (both public cases send them). */
export const BROWSER_HEADERS = { accept: "text/html", "accept-language": "en" };

export interface Target {
  /** e.g. http://127.0.0.1:8080/v1 */
  baseUrl: string;
  organization: string;
  key: string;
  /** Where the public surface answers (PUBLIC_BASE_URL and RESOLVER_BASE_URL are one listener here). */
  publicBaseUrl?: string;
}

export interface HttpRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** The status a successful answer has. */
  expect: number;
}

/** The create body of tools/bench/passports.mjs: what an integrator sends first. */
export function createBody(tag: string, n: number): Record<string, unknown> {
  return {
    category: "textile",
    external_id: `${tag}-${n}`,
    data: {
      product_name: `Bench T-shirt ${n}`,
      material_composition: [{ fiber: "cotton", percentage: 100 }],
    },
  };
}

/** A valid GTIN-14 (GS1 check digit) made from a counter: unique per `n`. */
export function gtinOf(prefix: number, n: number): string {
  const body = `${String(prefix).padStart(3, "0")}${String(n).padStart(10, "0")}`.slice(-13);
  let sum = 0;
  for (let i = 0; i < 13; i++) sum += Number(body[12 - i]) * (i % 2 === 0 ? 3 : 1);
  return body + String((10 - (sum % 10)) % 10);
}

/** A draft that can be published: a GTIN and every field the textile category requires before publishing. */
export function publishableBody(tag: string, n: number, gtinPrefix: number): Record<string, unknown> {
  return {
    category: "textile",
    external_id: `${tag}-${n}`,
    data: {
      product_name: `Bench T-shirt ${n}`,
      manufacturer_name: "Bench Textiles SA",
      manufacturer_address: "1 Rue du Banc, 75001 Paris",
      manufacturer_country: "FR",
      material_composition: [{ fiber: "cotton", percentage: 100 }],
      substances_of_concern: [],
      recycling_instructions: "Return to a textile collection point.",
      care_instructions: "Wash at 30 degrees.",
      gtin: gtinOf(gtinPrefix, n),
    },
  };
}

/** Per connection: the cursor it follows (list and feed walk pages; at the end they start again). */
export interface ConnectionState {
  cursor?: string;
}

export interface CaseInput {
  /** Passports to read and patch. */
  ids: string[];
  /** Drafts to publish, consumed one per request (shared by the connections). */
  drafts: string[];
  tag: string;
  /** Published live passports (the public cases): their ids and GTIN-14s, the same paths on both sides. */
  publicIds?: string[];
  publicGtins?: string[];
}

/** The next request of a connection, or undefined when the case has nothing left to do (no draft left). */
export function nextRequest(
  kase: CaseName,
  t: Target,
  input: CaseInput,
  conn: ConnectionState,
  n: number,
): HttpRequest | undefined {
  const base = new URL(t.baseUrl).pathname.replace(/\/$/, "");
  const org = `${base}/organizations/${encodeURIComponent(t.organization)}`;
  const auth = { authorization: `Bearer ${t.key}` };
  const json = { ...auth, "content-type": "application/json" };
  const pick = () => input.ids[Math.floor(Math.random() * input.ids.length)]!;
  const cursor = conn.cursor ? `&cursor=${encodeURIComponent(conn.cursor)}` : "";
  switch (kase) {
    case "get":
      return {
        method: "GET",
        path: `${org}/passports/${encodeURIComponent(pick())}`,
        headers: auth,
        expect: 200,
      };
    case "list":
      return { method: "GET", path: `${org}/passports?limit=20${cursor}`, headers: auth, expect: 200 };
    case "feed":
      return { method: "GET", path: `${org}/events?limit=100${cursor}`, headers: auth, expect: 200 };
    case "create":
      return {
        method: "POST",
        path: `${org}/passports`,
        headers: json,
        body: JSON.stringify(createBody(input.tag, n)),
        expect: 201,
      };
    case "create_idem":
      return {
        method: "POST",
        path: `${org}/passports`,
        headers: { ...json, "idempotency-key": `${input.tag}-${n}` },
        body: JSON.stringify(createBody(input.tag, n)),
        expect: 201,
      };
    case "patch":
      return {
        method: "PATCH",
        path: `${org}/passports/${encodeURIComponent(pick())}`,
        headers: json,
        body: JSON.stringify({ data: { product_description: `Patched by the benchmark, request ${n}.` } }),
        expect: 200,
      };
    case "resolve": {
      const gtins = input.publicGtins!;
      return { method: "GET", path: `/01/${gtins[n % gtins.length]}`, headers: BROWSER_HEADERS, expect: 307 };
    }
    case "page": {
      const ids = input.publicIds!;
      return {
        method: "GET",
        path: `/p/${encodeURIComponent(ids[n % ids.length]!)}`,
        headers: BROWSER_HEADERS,
        expect: 200,
      };
    }
    case "publish": {
      const id = input.drafts.pop();
      if (id === undefined) return undefined;
      return {
        method: "POST",
        path: `${org}/passports/${encodeURIComponent(id)}/publish`,
        headers: json,
        body: "{}",
        expect: 200,
      };
    }
  }
}

const LIST_END = Buffer.from(',"has_more":');

/**
 * `has_more` and `next_cursor` of a list page, read from its end: both stacks answer them as the envelope's last
 * two fields, so a cursor is followed without decoding and parsing the page (a feed page of 100 events is about
 * 50 KB; parsing it whole took more of the load generator's time than a GET's whole answer, from the cores both
 * sides share). A page that does not end that way is parsed whole.
 */
export function listEnd(raw: Buffer): { has_more: boolean; next_cursor: string | null } {
  const at = raw.lastIndexOf(LIST_END);
  if (at >= 0) {
    try {
      const end = JSON.parse(`{${raw.toString("utf8", at + 1)}`) as Record<string, unknown>;
      const cursor = end.next_cursor;
      if (
        Object.keys(end).length === 2 &&
        typeof end.has_more === "boolean" &&
        (typeof cursor === "string" || cursor === null)
      )
        return { has_more: end.has_more, next_cursor: cursor };
    } catch {
      // not the envelope's end: parsed whole below
    }
  }
  const page = JSON.parse(raw.toString("utf8")) as { has_more: boolean; next_cursor: string | null };
  return { has_more: page.has_more, next_cursor: page.next_cursor };
}

/** Whether the case reads the answer (to follow the cursor). */
export const FOLLOWS_CURSOR: ReadonlySet<CaseName> = new Set(["list", "feed"]);
