/**
 * Documents on S3-compatible storage: the same uploads as documents.e2e.test.ts through presigned URLs of a real
 * S3-protocol server (@20minutes/s3rver, started here; it verifies SigV4 signatures, so a changed Content-Type or
 * URL is refused by the store itself). Confirmation comes from reading (no notification), an oversize object is
 * never made ready, and storage that does not answer makes publish 503 with nothing published.
 */
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const S3rver = require("@20minutes/s3rver") as new (o: Record<string, unknown>) => {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
};
import { startHarness, type Harness, type Tenant } from "./support/harness";
import { publishableTextile } from "./support/fixtures";
import { pdfFile, pngFile } from "./support/files";

jest.setTimeout(180_000);

const DIR = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-e2e-s3rver-"));
const BUCKET = "dpp-documents";
let port = 0;
let s3: InstanceType<typeof S3rver> | undefined;
let h: Harness;
let t: Tenant;

const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });

async function startS3() {
  s3 = new S3rver({
    address: "127.0.0.1",
    port,
    silent: true,
    directory: DIR,
    configureBuckets: [{ name: BUCKET }],
  });
  await s3.run();
}
async function stopS3() {
  await s3?.close();
  s3 = undefined;
}

beforeAll(async () => {
  port = await freePort();
  await startS3();
  h = await startHarness("documents_s3", {
    env: {
      DOCUMENTS_STORAGE: "s3",
      S3_BUCKET: BUCKET,
      S3_REGION: "us-east-1",
      S3_ENDPOINT: `http://127.0.0.1:${port}`,
      S3_FORCE_PATH_STYLE: "true",
      S3_ACCESS_KEY_ID: "S3RVER",
      S3_SECRET_ACCESS_KEY: "S3RVER",
    },
  });
  t = await h.tenant("Acme", "pro");
});
afterAll(async () => {
  await h?.close();
  await stopS3();
  fs.rmSync(DIR, { recursive: true, force: true });
});

function gtin13(stem12: string): string {
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += (stem12.charCodeAt(11 - i) - 48) * (i % 2 === 0 ? 3 : 1);
  return stem12 + ((10 - (sum % 10)) % 10);
}
let stem = 590123500000;
const passports = () => `/organizations/${t.organizationId}/passports`;

async function draft(data: Record<string, unknown> = {}) {
  const res = await h.request(passports(), {
    key: t.testKey,
    body: { category: "textile", data: { ...publishableTextile({ gtin: gtin13(String(stem++)) }), ...data } },
  });
  h.expectStatus(res, 201);
  return res.body.id as string;
}
const attach = (passportId: string, body: unknown) =>
  h.request(`${passports()}/${passportId}/documents`, { key: t.testKey, body });
const getDocument = (id: string) =>
  h.request(`/organizations/${t.organizationId}/documents/${id}`, { key: t.testKey });
const put = (url: string, body: Buffer, headers: Record<string, string>) =>
  fetch(url, { method: "PUT", body, headers });

it("uploads a real PNG and PDF to S3 with plain HTTP, confirms them on read, links one to a second passport and publishes", async () => {
  const first = await draft();
  const png = pngFile();
  const pdf = pdfFile();
  const a = await attach(first, {
    type: "image",
    access_tier: "public",
    file_name: "p.png",
    mime_type: "image/png",
  });
  h.expectStatus(a, 201);
  expect(a.body.upload.url).toContain(`127.0.0.1:${port}/${BUCKET}/`);
  expect((await put(a.body.upload.url, png, a.body.upload.headers)).status).toBe(200);
  expect((await getDocument(a.body.id)).body).toMatchObject({ upload_state: "ready", file_size: png.length });

  const b = await attach(first, {
    type: "conformity_declaration",
    access_tier: "restricted",
    file_name: "doc.pdf",
    mime_type: "application/pdf",
  });
  h.expectStatus(b, 201);
  expect((await put(b.body.upload.url, pdf, b.body.upload.headers)).status).toBe(200);
  expect((await getDocument(b.body.id)).body.upload_state).toBe("ready");

  const second = await draft({ care_instructions: undefined, care_instructions_document_id: b.body.id });
  h.expectStatus(await attach(second, { document_id: b.body.id }), 201);
  h.expectStatus(await attach(second, { document_id: b.body.id }), 200);
  const pub = await h.request(`${passports()}/${second}/publish`, { key: t.testKey, method: "POST" });
  h.expectStatus(pub, 200);

  // Read back through the presigned GET.
  const dl = await h.request(`/organizations/${t.organizationId}/documents/${b.body.id}/download`, {
    key: t.testKey,
  });
  h.expectStatus(dl, 200);
  const got = await fetch(dl.body.url);
  expect(got.status).toBe(200);
  expect(Buffer.from(await got.arrayBuffer()).equals(pdf)).toBe(true);
});

it("is refused by the store with a wrong Content-Type or a tampered URL; an oversize or mistyped object is never ready", async () => {
  const p = await draft();
  const created = await attach(p, {
    type: "image",
    access_tier: "public",
    file_name: "x.png",
    mime_type: "image/png",
  });
  h.expectStatus(created, 201);
  const { url, headers } = created.body.upload;
  expect((await put(url, pngFile(), { "Content-Type": "image/jpeg" })).status).toBe(403);
  const tampered = new URL(url);
  tampered.pathname = tampered.pathname.replace(created.body.id, "doc_01jzzzzzzzzzzzzzzzzzzzzzzz");
  expect((await put(tampered.toString(), pngFile(), headers)).status).toBe(403);
  const sig = new URL(url);
  sig.searchParams.set("X-Amz-Signature", "0".repeat(64));
  expect((await put(sig.toString(), pngFile(), headers)).status).toBe(403);
  expect((await getDocument(created.body.id)).body.upload_state).toBe("pending");

  // S3 cannot bound a presigned PUT's size: the object is checked when confirmed.
  expect((await put(url, Buffer.concat([pngFile(), Buffer.alloc(10_485_760)]), headers)).status).toBe(200);
  expect((await getDocument(created.body.id)).body).toMatchObject({
    upload_state: "pending",
    upload_problem: { code: "file_too_large" },
  });

  const mistyped = await attach(p, {
    type: "document",
    access_tier: "public",
    file_name: "d.pdf",
    mime_type: "application/pdf",
  });
  h.expectStatus(mistyped, 201);
  expect((await put(mistyped.body.upload.url, pngFile(), mistyped.body.upload.headers)).status).toBe(200);
  expect((await getDocument(mistyped.body.id)).body).toMatchObject({
    upload_state: "pending",
    upload_problem: { code: "content_mismatch" },
  });
});

it("answers 503 storage_unavailable at publish while the store is down, and publishes nothing", async () => {
  const p = await draft();
  const created = await attach(p, {
    type: "image",
    access_tier: "public",
    file_name: "y.png",
    mime_type: "image/png",
  });
  expect((await put(created.body.upload.url, pngFile(), created.body.upload.headers)).status).toBe(200);
  expect((await getDocument(created.body.id)).body.upload_state).toBe("ready");
  await stopS3();
  try {
    const res = await h.request(`${passports()}/${p}/publish`, { key: t.testKey, method: "POST" });
    h.expectStatus(res, 503);
    expect(res.body.error.code).toBe("storage_unavailable");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await h.request(`${passports()}/${p}`, { key: t.testKey })).body.status).toBe("draft");
  } finally {
    await startS3();
  }
  h.expectStatus(await h.request(`${passports()}/${p}/publish`, { key: t.testKey, method: "POST" }), 200);
});
