/**
 * The GS1 Digital Link resolver of the public surface (docs/decisions/0059-public-surface.md), on the whole stack,
 * reached at the qr_target and linkset_url the API reports for a passport, with no credential: the 307 to the
 * public page, linkType selection and its 404, the linkset (media type, RFC 9264 form validated against GS1's
 * linkset JSON schema), the Link header, CORS, GTIN normalisation and check digits, the serial and batch forms,
 * variants, malformed URIs, /.well-known/gs1resolver, and the unpublished, draft and test cases agreeing with
 * passport_links.
 */
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import linksetSchema from "./fixtures/gs1-linkset.schema.json";
import { startHarness, type Harness, type Tenant } from "./support/harness";
import { get, gtin13, makePassport, type Made } from "./support/public";

jest.setTimeout(180_000);

const ajv = new Ajv2020({ allErrors: true, strict: true, allowMatchingProperties: true });
addFormats(ajv);
const validateLinkset = ajv.compile(linksetSchema);
const GS1 = "https://gs1.org/voc/";

let h: Harness;
let t: Tenant;
let live: Made;
let draft: Made;
let testMode: Made;
const VARIANT_GTIN8 = "96385074";
const variantGtin13 = gtin13("765432100019");

beforeAll(async () => {
  h = await startHarness("pub35_resolver", { env: { PUBLIC_CACHE_TTL_MS: "300" } });
  t = await h.tenant("Acme", "pro");
  live = await makePassport(h, t, {
    key: t.liveKey,
    gtin: gtin13("400638133393"),
    variants: [
      { gtin: VARIANT_GTIN8, size: "S", colour: "Red" },
      { gtin: variantGtin13, size: "M", colour: "Blue" },
    ],
  });
  draft = await makePassport(h, t, { key: t.liveKey, gtin: gtin13("400638133394"), publish: false });
  testMode = await makePassport(h, t, { key: t.testKey, gtin: gtin13("400638133395") });
});
afterAll(async () => {
  await h?.close();
});

const resolver = () => h.stack.resolverUrl;

function expectCors(headers: Headers) {
  expect(headers.get("access-control-allow-origin")).toBe("*");
}

function expectLinksetHeader(headers: Headers, canonical: string) {
  const link = headers.get("link") ?? "";
  expect(link).toContain(`<${canonical}?linkType=linkset>; rel="linkset"; type="application/linkset+json"`);
}

describe("the links a passport reports", () => {
  it("point at the resolver and the public page on this machine, and say the live passport resolves", () => {
    expect(live.links.resolves_publicly).toBe(true);
    expect(live.links.not_resolvable_reason).toBeNull();
    expect(live.links.qr_target).toBe(`${resolver()}/01/${live.gtin14}`);
    expect(live.links.gs1_digital_link.linkset_url).toBe(`${resolver()}/01/${live.gtin14}?linkType=linkset`);
    expect(live.links.public_url).toBe(`${h.stack.publicUrl}/p/${live.id}`);
  });
});

describe("GET /01/{gtin}", () => {
  it("answers qr_target with a 307 to the public page, a Link header to the linkset and CORS", async () => {
    const res = await get(live.links.qr_target);
    expect(res.status).toBe(307);
    expect(res.headers.get("location")).toBe(live.links.public_url);
    expectLinksetHeader(res.headers, live.links.qr_target);
    expectCors(res.headers);
    expect(res.headers.get("cache-control")).toMatch(/max-age=\d+/);
    const page = await get(res.headers.get("location")!);
    expect(page.status).toBe(200);
    expect(page.text).toContain("Organic T-shirt");
  });

  it("normalises a GTIN-13 to 14 digits (the same answer), tolerates a trailing slash and passes the query on", async () => {
    const short = await get(`${resolver()}/01/${live.gtin13}/?utm_source=label`);
    expect(short.status).toBe(307);
    expect(short.headers.get("location")).toBe(`${live.links.public_url}?utm_source=label`);
    expectLinksetHeader(short.headers, live.links.qr_target);
  });

  it("answers HEAD as GET, without a body", async () => {
    const res = await get(live.links.qr_target, {}, "HEAD");
    expect(res.status).toBe(307);
    expect(res.headers.get("location")).toBe(live.links.public_url);
    expect(res.text).toBe("");
  });

  it("answers a CORS preflight on a resolver route", async () => {
    const res = await get(
      live.links.qr_target,
      {
        Origin: "https://scanner.example",
        "Access-Control-Request-Method": "GET",
      },
      "OPTIONS",
    );
    expect(res.status).toBe(204);
    expectCors(res.headers);
    expect(res.headers.get("access-control-allow-methods")).toContain("GET");
    expect(res.headers.get("access-control-expose-headers")).toContain("Link");
  });

  it("resolves a variant's GTIN (as 8 or 13 digits) to its passport, showing the variant", async () => {
    for (const g of [VARIANT_GTIN8, VARIANT_GTIN8.padStart(14, "0"), variantGtin13]) {
      const res = await get(`${resolver()}/01/${g}`);
      expect(res.status).toBe(307);
      expect(res.headers.get("location")).toBe(`${live.links.public_url}?variant=${g.padStart(14, "0")}`);
    }
    const page = await get(`${live.links.public_url}?variant=${variantGtin13.padStart(14, "0")}`);
    expect(page.text).toMatch(/You scanned this variant/);
  });

  it("refuses a malformed URI with 400: a bad check digit, a wrong length, letters, qualifiers out of order", async () => {
    const bad = live.gtin13.slice(0, 12) + String((Number(live.gtin13[12]) + 1) % 10);
    for (const path of [
      `/01/${bad}`,
      "/01/1234567",
      "/01/40063813339x1",
      `/01/${live.gtin14}/21/A1/10/B1`,
      `/01/${live.gtin14}/21`,
      `/01/${live.gtin14}/99/x`,
      `/01/${live.gtin14}/21/${"x".repeat(21)}`,
      "/01/",
    ]) {
      const res = await get(resolver() + path, { Accept: "application/json" });
      expect([path, res.status]).toEqual([path, 400]);
      expect(JSON.parse(res.text).error.code).toBe("invalid_request");
      expectCors(res.headers);
    }
    const html = await get(`${resolver()}/01/${bad}`, { Accept: "text/html" });
    expect(html.status).toBe(400);
    expect(html.text).toContain("check digit");
  });
});

describe("?linkType=", () => {
  it("redirects to the link of the type asked (full URI, gs1: CURIE or bare name)", async () => {
    for (const lt of [`${GS1}careInstructions`, "gs1:careInstructions", "careInstructions"]) {
      const res = await get(`${live.links.qr_target}?linkType=${encodeURIComponent(lt)}`);
      expect(res.status).toBe(307);
      expect(res.headers.get("location")).toBe(`${live.links.public_url}#care`);
      expectLinksetHeader(res.headers, live.links.qr_target);
    }
    const pip = await get(`${live.links.qr_target}?linkType=gs1:pip`);
    expect(pip.headers.get("location")).toBe(live.links.public_url);
  });

  it("answers 404 for a link type the item does not have, with the Link header and a helpful page", async () => {
    const res = await get(`${live.links.qr_target}?linkType=gs1:allergenInfo`, { Accept: "text/html" });
    expect(res.status).toBe(404);
    expectLinksetHeader(res.headers, live.links.qr_target);
    expectCors(res.headers);
    expect(res.text).toContain("allergenInfo");
  });
});

describe("the linkset", () => {
  const linksetOf = (text: string) => JSON.parse(text) as { linkset: Array<Record<string, any>> };

  it("answers ?linkType=linkset as application/linkset+json that validates against GS1's linkset schema", async () => {
    const res = await get(live.links.gs1_digital_link.linkset_url!);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/linkset+json");
    expectCors(res.headers);
    const link = res.headers.get("link") ?? "";
    expect(link).toContain('rel="linkset"');
    expect(link).toContain(
      '<https://ref.gs1.org/standards/resolver/linkset-context>; rel="http://www.w3.org/ns/json-ld#context"',
    );
    const body = linksetOf(res.text);
    const valid = validateLinkset(body);
    expect(validateLinkset.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
    const item = body.linkset[0]!;
    expect(item.anchor).toBe(live.links.qr_target);
    expect(item.itemDescription).toContain("Organic T-shirt");
    expect(item[`${GS1}defaultLink`]).toEqual([
      expect.objectContaining({ href: live.links.public_url, type: "text/html", hreflang: ["en", "fr"] }),
    ]);
    expect(Object.keys(item)).toEqual(
      expect.arrayContaining([`${GS1}dpp`, `${GS1}pip`, `${GS1}careInstructions`, `${GS1}recyclingInfo`]),
    );
    for (const [rel, targets] of Object.entries(item))
      if (rel.startsWith(GS1)) for (const target of targets) expect(target.title).toEqual(expect.any(String));
  });

  it("is what Accept: application/linkset+json asks for too, with an ETag that answers 304", async () => {
    const res = await get(live.links.qr_target, { Accept: "application/linkset+json" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/linkset+json");
    expect(validateLinkset(linksetOf(res.text))).toBe(true);
    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^".+"$/);
    const again = await get(live.links.qr_target, {
      Accept: "application/linkset+json",
      "If-None-Match": etag,
    });
    expect(again.status).toBe(304);
  });

  it("at serial level includes the GTIN level's links, anchored at the serial URI", async () => {
    const serialUri = `${live.links.qr_target}/21/ABC-123`;
    const gtinLevel = linksetOf((await get(live.links.gs1_digital_link.linkset_url!)).text).linkset[0]!;
    const res = await get(`${serialUri}?linkType=linkset`);
    expect(res.status).toBe(200);
    const body = linksetOf(res.text);
    expect(validateLinkset(body)).toBe(true);
    const item = body.linkset[0]!;
    expect(item.anchor).toBe(serialUri);
    for (const rel of Object.keys(gtinLevel).filter((k) => k.startsWith(GS1)))
      expect(item[rel]).toEqual(expect.arrayContaining(gtinLevel[rel]));
    const redirect = await get(serialUri);
    expect(redirect.status).toBe(307);
    expect(redirect.headers.get("location")).toBe(live.links.public_url);
    expectLinksetHeader(redirect.headers, serialUri);
  });

  it("resolves the batch form with the GTIN's links, anchored at the batch URI", async () => {
    const batchUri = `${live.links.qr_target}/10/LOT%2F42`;
    const redirect = await get(batchUri);
    expect(redirect.status).toBe(307);
    expect(redirect.headers.get("location")).toBe(live.links.public_url);
    expectLinksetHeader(redirect.headers, batchUri);
    const res = await get(`${batchUri}?linkType=linkset`);
    const body = linksetOf(res.text);
    expect(validateLinkset(body)).toBe(true);
    expect(body.linkset[0]!.anchor).toBe(batchUri);
    expect(body.linkset[0]!.itemDescription).toContain("batch LOT/42");
  });
});

describe("identifiers that do not resolve", () => {
  it("answers 404 with a helpful page for a draft, a test-mode passport and an unknown GTIN, as passport_links says", async () => {
    expect(draft.links.resolves_publicly).toBe(false);
    expect(draft.links.not_resolvable_reason).toBe("not_published");
    expect(testMode.links.resolves_publicly).toBe(false);
    expect(testMode.links.not_resolvable_reason).toBe("test_mode");
    for (const target of [
      draft.links.qr_target,
      testMode.links.qr_target,
      `${resolver()}/01/${gtin13("999999999999")}`,
    ]) {
      const res = await get(target, { Accept: "text/html", "Accept-Language": "en" });
      expect([target, res.status]).toEqual([target, 404]);
      expect(res.headers.get("content-type")).toContain("text/html");
      expect(res.text).toContain("No published passport here");
      expectCors(res.headers);
      expect(res.headers.get("link")).toContain('rel="linkset"');
      const json = await get(target, { Accept: "application/json" });
      expect(json.status).toBe(404);
      expect(JSON.parse(json.text).error.code).toBe("resource_not_found");
    }
    expect((await get(draft.links.public_url)).status).toBe(404);
    expect((await get(testMode.links.public_url)).status).toBe(404);
  });

  it("stops resolving once the passport is unpublished, within the cache lifetime", async () => {
    const other = await makePassport(h, t, { key: t.liveKey, gtin: gtin13("400638133396") });
    expect((await get(other.links.qr_target)).status).toBe(307);
    const base = `/organizations/${t.organizationId}/passports/${other.id}`;
    h.expectStatus(await h.request(`${base}/unpublish`, { key: t.liveKey, method: "POST" }), 200);
    const after = await h.request(`${base}/links`, { key: t.liveKey });
    expect(after.body.resolves_publicly).toBe(false);
    // PUBLIC_CACHE_TTL_MS is 300 ms in this stack.
    await new Promise((r) => setTimeout(r, 400));
    expect((await get(other.links.qr_target)).status).toBe(404);
    expect((await get(other.links.public_url)).status).toBe(404);
  });
});

describe("/.well-known/gs1resolver", () => {
  it("describes the resolver, with CORS", async () => {
    const res = await get(`${resolver()}/.well-known/gs1resolver`);
    expect(res.status).toBe(200);
    expectCors(res.headers);
    const body = JSON.parse(res.text);
    expect(body).toMatchObject({
      resolverRoot: resolver(),
      supportedPrimaryKeys: ["gtin"],
      supportedLinkType: [expect.objectContaining({ namespace: GS1, prefix: "gs1:" })],
    });
    expect(body.name).toEqual(expect.any(String));
  });
});
