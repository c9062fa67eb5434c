/**
 * The public passport page at public_url (docs/decisions/0059-public-surface.md), on the whole stack, with no
 * credential: the HTML grouped in sections with only public-tier data and files, English and French, the photo
 * gallery and document downloads, JSON and JSON-LD by content negotiation, ETag and Cache-Control, answers from
 * memory while the owners are down (a scan costs no Postgres round trip once cached), and the per-address rate
 * limit.
 */
import { startHarness, type Harness, type Tenant } from "./support/harness";
import { publishableBattery } from "./support/fixtures";
import { get, gtin13, makePassport, type Made } from "./support/public";

jest.setTimeout(180_000);

let h: Harness;
let t: Tenant;
let p: Made;
let documents: Array<{ id: string; access_tier: string; display_name: string }>;
const RATE = 400;

beforeAll(async () => {
  h = await startHarness("pub35_page", {
    env: { PUBLIC_CACHE_TTL_MS: "600000", PUBLIC_RATE_LIMIT_PER_MINUTE: String(RATE) },
  });
  t = await h.tenant("Acme", "pro");
  p = await makePassport(h, t, {
    key: t.liveKey,
    gtin: gtin13("500000000001"),
    data: {
      brand_name: "Acme Basics",
      material_composition: [
        { fiber: "cotton", percentage: 95 },
        { fiber: "elastane", percentage: 5 },
      ],
      carbon_footprint: { value: 4.2, unit: "kgCO2e" },
      repair_information: "Seams can be re-sewn by any tailor.",
      manufacturing_facilities: [
        { step: "making_up", facility_identifier: "GLN-0000000000001", facility_name: "Secret Mill" },
      ],
    },
    variants: [{ gtin: gtin13("500000000002"), size: "M", colour: "Navy" }],
    photo: true,
    pdf: true,
    restrictedPdf: true,
  });
  const listed = await h.request(`/organizations/${t.organizationId}/passports/${p.id}/documents`, {
    key: t.liveKey,
  });
  h.expectStatus(listed, 200);
  documents = listed.body.data;
});
afterAll(async () => {
  await h?.close();
});

const html = (headers: Record<string, string> = {}, url = p.links.public_url) =>
  get(url, { Accept: "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8", ...headers });

describe("the HTML page", () => {
  it("shows the published passport in sections, in English by default, without JavaScript", async () => {
    const res = await html({ "Accept-Language": "en-GB,en;q=0.9" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-language")).toBe("en");
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.text).toContain('<html lang="en">');
    expect(res.text).toMatch(/<h1>Organic T-shirt<\/h1>/);
    expect(res.text).not.toMatch(/<script/i);
    for (const heading of [
      "Identity and operator",
      "Composition",
      "Substances of concern",
      "Environmental information",
      "Care, repair and end of life",
      "Variants",
      "Photos",
      "Documents",
    ])
      expect(res.text).toContain(`>${heading}</h2>`);
    expect(res.text).toContain("Fibre composition");
    expect(res.text).toMatch(/cotton<\/span><\/td><td>95 %/);
    expect(res.text).toContain("4.2 kgCO2e");
    expect(res.text).toContain("Seams can be re-sewn by any tailor.");
    expect(res.text).toContain("The manufacturer declares that no substance of concern is present.");
    expect(res.text).toContain("Navy");
    expect(res.text).toContain("Acme Basics");
    expect(res.text).toContain('<main id="main">');
  });

  it("never shows restricted data or restricted files", async () => {
    // The passport holds them: the API shows them to its own key.
    const own = await h.request(`/organizations/${t.organizationId}/passports/${p.id}`, { key: t.liveKey });
    expect(JSON.stringify(own.body.data)).toContain("Secret Mill");
    const res = await html();
    expect(res.text).not.toContain("Secret Mill");
    expect(res.text).not.toContain("GLN-0000000000001");
    expect(res.text).not.toContain("Manufacturing facilities");
    expect(res.text).not.toContain("Laboratory test report");
    const restricted = documents.find((d) => d.access_tier === "restricted")!;
    expect((await get(`${p.links.public_url}/documents/${restricted.id}`)).status).toBe(404);
  });

  it("shows public photos with alt text and links public documents for download", async () => {
    const res = await html();
    const photo = documents.find((d) => d.display_name === "Front view")!;
    const pdf = documents.find((d) => d.display_name === "EU declaration of conformity")!;
    expect(res.text).toContain(`<img src="/p/${p.id}/documents/${photo.id}" alt="Photo: Front view"`);
    expect(res.text).toContain(
      `<a href="/p/${p.id}/documents/${pdf.id}" download>EU declaration of conformity</a>`,
    );
    const redirect = await get(`${p.links.public_url}/documents/${pdf.id}`);
    expect(redirect.status).toBe(302);
    const file = await fetch(redirect.headers.get("location")!);
    expect(file.status).toBe(200);
    expect(
      Buffer.from(await file.arrayBuffer())
        .subarray(0, 5)
        .toString(),
    ).toBe("%PDF-");
    const image = await fetch(`${p.links.public_url}/documents/${photo.id}`);
    expect(image.status).toBe(200);
    expect(
      Buffer.from(await image.arrayBuffer())
        .subarray(1, 4)
        .toString(),
    ).toBe("PNG");
  });

  it("speaks French by Accept-Language and by the visible switch, labels included", async () => {
    const fr = await html({ "Accept-Language": "fr-FR,fr;q=0.9,en;q=0.5" });
    expect(fr.headers.get("content-language")).toBe("fr");
    expect(fr.text).toContain('<html lang="fr">');
    expect(fr.text).toContain(">Entretien, réparation et fin de vie</h2>");
    expect(fr.text).toContain("Composition en fibres");
    expect(fr.text).toContain("4,2 kgCO2e");
    const en = await html({ "Accept-Language": "fr" }, `${p.links.public_url}?lang=en`);
    expect(en.text).toContain('<html lang="en">');
    expect(en.text).toContain(`href="/p/${p.id}?lang=fr" hreflang="fr" lang="fr">Français</a>`);
    const switched = await html({}, `${p.links.public_url}?lang=fr`);
    expect(switched.text).toContain(">Informations environnementales</h2>");
  });

  it("answers 304 to its ETag, with Cache-Control and Vary", async () => {
    const res = await html();
    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^".+"$/);
    expect(res.headers.get("cache-control")).toMatch(/^public, max-age=\d+$/);
    expect(res.headers.get("vary")).toContain("Accept-Language");
    const again = await html({ "If-None-Match": etag });
    expect(again.status).toBe(304);
    expect(again.text).toBe("");
    const other = await html({ "If-None-Match": '"something-else"' });
    expect(other.status).toBe(200);
  });
});

describe("a battery passport", () => {
  it("lists its units with their status on the page and in the JSON, and resolves each unit's serial to them", async () => {
    const base = `/organizations/${t.organizationId}/passports`;
    const created = await h.request(base, {
      key: t.liveKey,
      body: { category: "battery", data: publishableBattery({ gtin: gtin13("500000000019") }) },
    });
    h.expectStatus(created, 201);
    const id = created.body.id as string;
    const units = await h.request(`${base}/${id}/units`, {
      key: t.liveKey,
      body: { units: [{ unit_serial: "BAT-0001", status: "original" }, { unit_serial: "BAT-0002" }] },
    });
    h.expectStatus(units, 201);
    h.expectStatus(await h.request(`${base}/${id}/publish`, { key: t.liveKey, method: "POST" }), 200);
    const links = await h.request(`${base}/${id}/links`, { key: t.liveKey });
    h.expectStatus(links, 200);

    const page = await html({}, links.body.public_url);
    expect(page.status).toBe(200);
    expect(page.text).toContain(">Battery units</h2>");
    expect(page.text).toContain("<tr><td>BAT-0001</td><td>original</td></tr>");
    expect(page.text).toContain("<tr><td>BAT-0002</td><td>–</td></tr>");
    const french = await html({ "Accept-Language": "fr" }, links.body.public_url);
    expect(french.text).toContain(">Unités de batterie</h2>");

    const json = await get(links.body.public_url, { Accept: "application/json" });
    expect(json.status).toBe(200);
    expect(JSON.parse(json.text).units).toEqual([
      { unit_serial: "BAT-0001", status: "original" },
      { unit_serial: "BAT-0002", status: null },
    ]);

    // A unit's serial URI (GS1 AI 21) resolves to the page's units; an unknown serial only to the GTIN level.
    const serialLinks = async (serial: string) => {
      const res = await get(`${links.body.qr_target}/21/${serial}?linkType=linkset`);
      expect(res.status).toBe(200);
      const item = JSON.parse(res.text).linkset[0];
      return (item["https://gs1.org/voc/dpp"] as Array<{ href: string; title: string }>).map((l) => l.href);
    };
    expect(await serialLinks("BAT-0002")).toContain(`${links.body.public_url}#units`);
    expect(await serialLinks("BAT-9999")).not.toContain(`${links.body.public_url}#units`);
  });
});

describe("the same data as JSON and JSON-LD", () => {
  it("answers Accept: application/json with the public data only", async () => {
    const res = await get(p.links.public_url, { Accept: "application/json" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    const body = JSON.parse(res.text);
    expect(body).toMatchObject({
      object: "public_passport",
      id: p.id,
      product_name: "Organic T-shirt",
      gtin: p.gtin14,
      public_url: p.links.public_url,
      qr_target: p.links.qr_target,
    });
    expect(body.data.manufacturing_facilities).toBeUndefined();
    expect(body.data.material_composition).toHaveLength(2);
    expect(body.documents.map((d: any) => d.name).sort()).toEqual([
      "EU declaration of conformity",
      "Front view",
    ]);
    expect(body.variants).toEqual([
      { gtin: gtin13("500000000002").padStart(14, "0"), size: "M", colour: "Navy" },
    ]);
  });

  it("answers Accept: application/ld+json with a schema.org Product carrying the identifiers", async () => {
    const res = await get(p.links.public_url, { Accept: "application/ld+json" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/ld+json; charset=utf-8");
    const body = JSON.parse(res.text);
    expect(body).toMatchObject({
      "@context": "https://schema.org",
      "@type": "Product",
      "@id": p.links.public_url,
      name: "Organic T-shirt",
      gtin14: p.gtin14,
      brand: { "@type": "Brand", name: "Acme Basics" },
      sameAs: p.links.qr_target,
      material: ["cotton 95 %", "elastane 5 %"],
    });
    expect(JSON.stringify(body)).not.toContain("Secret Mill");
  });
});

describe("preview_url", () => {
  it("shows a draft or a test passport to whoever holds the signed link, privately, public tier only", async () => {
    expect(p.links.preview_url).toBeNull();
    const draft = await makePassport(h, t, {
      key: t.liveKey,
      gtin: gtin13("500000000011"),
      publish: false,
      data: {
        product_name: "Draft Jacket",
        manufacturing_facilities: [
          { step: "making_up", facility_identifier: "GLN-2", facility_name: "Hidden Works" },
        ],
      },
      photo: true,
    });
    const testOne = await makePassport(h, t, { key: t.testKey, gtin: gtin13("500000000012") });
    expect((await html({}, draft.links.public_url)).status).toBe(404);
    for (const [made, name] of [
      [draft, "Draft Jacket"],
      [testOne, "Organic T-shirt"],
    ] as const) {
      const url = made.links.preview_url!;
      expect(url).toMatch(new RegExp(`^${h.stack.publicUrl}/p/${made.id}/preview\\?token=`));
      const res = await html({}, url);
      expect([made.id, res.status]).toEqual([made.id, 200]);
      expect(res.headers.get("cache-control")).toBe("private, no-store");
      expect(res.headers.get("x-robots-tag")).toBe("noindex");
      expect(res.text).toContain(`<h1>${name}</h1>`);
      expect(res.text).toContain("Preview for the maker only");
    }
    const page = await html({}, draft.links.preview_url!);
    expect(page.text).not.toContain("Hidden Works");
    const photo = /<img src="([^"]+)" alt="Photo: Front view"/.exec(page.text)![1]!.replace(/&#38;/g, "&");
    const image = await fetch(new URL(photo, h.stack.publicUrl));
    expect(image.status).toBe(200);
    expect(
      Buffer.from(await image.arrayBuffer())
        .subarray(1, 4)
        .toString(),
    ).toBe("PNG");
  });

  it("refuses a link without its token, with an altered token or with another passport's", async () => {
    const draft = await makePassport(h, t, { key: t.liveKey, gtin: gtin13("500000000021"), publish: false });
    const other = await makePassport(h, t, { key: t.liveKey, gtin: gtin13("500000000022"), publish: false });
    const url = new URL(draft.links.preview_url!);
    const token = url.searchParams.get("token")!;
    const altered = token.slice(0, -1) + (token.endsWith("A") ? "B" : "A");
    for (const bad of [
      `${draft.links.public_url}/preview`,
      `${draft.links.public_url}/preview?token=${altered}`,
      `${draft.links.public_url}/preview?token=${new URL(other.links.preview_url!).searchParams.get("token")}`,
    ]) {
      const res = await html({}, bad);
      expect([bad, res.status]).toEqual([bad, 403]);
      expect(res.text).toContain("This preview link is not valid");
      expect(res.headers.get("cache-control")).toBe("private, no-store");
    }
  });
});

describe("cost and limits", () => {
  it("answers from memory while passport, documents and variants-units are down", async () => {
    expect((await html()).status).toBe(200);
    expect((await get(p.links.qr_target)).status).toBe(307);
    await Promise.all(
      (["passport", "documents", "variants-units"] as const).map((s) => h.stack.stopService(s)),
    );
    try {
      const page = await html();
      expect(page.status).toBe(200);
      expect(page.text).toContain("Organic T-shirt");
      const scan = await get(p.links.qr_target);
      expect(scan.status).toBe(307);
      expect(scan.headers.get("location")).toBe(p.links.public_url);
    } finally {
      for (const s of ["passport", "documents", "variants-units"] as const) await h.stack.startService(s);
    }
  });

  it("limits requests per client address with 429 and Retry-After", async () => {
    let limited: Awaited<ReturnType<typeof get>> | undefined;
    // The window is a calendar minute: at most 2 × RATE requests see a 429 whatever the minute's start.
    for (let i = 0; i < 2 * RATE + 10 && !limited; i++) {
      const res = await get(`${h.stack.resolverUrl}/.well-known/gs1resolver`);
      if (res.status === 429) limited = res;
      else expect(res.status).toBe(200);
    }
    expect(limited).toBeDefined();
    expect(Number(limited!.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(JSON.parse(limited!.text).error.code).toBe("rate_limited");
    expect(limited!.headers.get("access-control-allow-origin")).toBe("*");
  });
});
