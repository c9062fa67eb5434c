/**
 * What the public-surface tests share: GTINs with their check digits, and a live passport published through the
 * API with variants, a public photo and a public PDF, as a brand would make one.
 */
import { publishableTextile } from "./fixtures";
import { pdfFile, pngFile } from "./files";
import type { Harness, Tenant } from "./harness";

/** A valid GTIN-13 from a 12-digit body: the GS1 check digit (weights 3 and 1 from the right) appended. */
export function gtin13(body: number | string): string {
  const digits = String(body).padStart(12, "0");
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += Number(digits[11 - i]) * (i % 2 === 0 ? 3 : 1);
  return digits + String((10 - (sum % 10)) % 10);
}

export interface Made {
  id: string;
  gtin13: string;
  gtin14: string;
  links: {
    public_url: string;
    qr_target: string;
    preview_url: string | null;
    resolves_publicly: boolean;
    not_resolvable_reason: string | null;
    gs1_digital_link: { uri: string | null; linkset_url: string | null; gtin14: string | null };
  };
}

export interface MakeOptions {
  key: string;
  gtin: string;
  publish?: boolean;
  data?: Record<string, unknown>;
  variants?: Array<{ gtin: string; size?: string; colour?: string }>;
  photo?: boolean;
  pdf?: boolean;
  restrictedPdf?: boolean;
}

export async function makePassport(h: Harness, t: Tenant, o: MakeOptions): Promise<Made> {
  const base = `/organizations/${t.organizationId}/passports`;
  const created = await h.request(base, {
    key: o.key,
    body: { category: "textile", data: publishableTextile({ gtin: o.gtin, ...o.data }) },
  });
  h.expectStatus(created, 201);
  const id = created.body.id as string;
  if (o.variants) {
    const v = await h.request(`${base}/${id}/variants`, { key: o.key, body: { variants: o.variants } });
    h.expectStatus(v, 201);
  }
  const upload = async (body: Record<string, unknown>, file: Buffer) => {
    const res = await h.request(`${base}/${id}/documents`, { key: o.key, body });
    h.expectStatus(res, 201);
    const put = await fetch(res.body.upload.url, {
      method: "PUT",
      body: file,
      headers: res.body.upload.headers,
    });
    if (put.status !== 200) throw new Error(`upload answered ${put.status}`);
  };
  if (o.photo)
    await upload(
      {
        type: "image",
        access_tier: "public",
        file_name: "front.png",
        display_name: "Front view",
        mime_type: "image/png",
      },
      pngFile(64, [200, 60, 40]),
    );
  if (o.pdf)
    await upload(
      {
        type: "conformity_declaration",
        access_tier: "public",
        file_name: "declaration.pdf",
        display_name: "EU declaration of conformity",
        mime_type: "application/pdf",
      },
      pdfFile(),
    );
  if (o.restrictedPdf)
    await upload(
      {
        type: "document",
        access_tier: "restricted",
        file_name: "test-report.pdf",
        display_name: "Laboratory test report",
        mime_type: "application/pdf",
      },
      pdfFile("Test report"),
    );
  if (o.publish !== false) {
    const published = await h.request(`${base}/${id}/publish`, { key: o.key, method: "POST" });
    h.expectStatus(published, 200);
  }
  const links = await h.request(`${base}/${id}/links`, { key: o.key });
  h.expectStatus(links, 200);
  return { id, gtin13: o.gtin, gtin14: o.gtin.padStart(14, "0"), links: links.body };
}

/** A request to the public surface without a credential; redirects are not followed. */
export async function get(
  url: string,
  headers: Record<string, string> = {},
  method = "GET",
): Promise<{ status: number; headers: Headers; text: string; bytes: Buffer }> {
  const res = await fetch(url, { method, headers, redirect: "manual" });
  const bytes = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, text: bytes.toString("utf8"), bytes };
}
