/**
 * Documents through the API on the filesystem store (the local stack's default): real PNG and PDF files uploaded
 * with plain HTTP PUTs to the returned URLs, which the documents service serves itself; every refusal of an upload
 * URL; linking and detaching; the lists; reads by audience; the publish checks that depend on files; the plan's
 * document limit and the capability's count; the sweep of expired uploads.
 */
import { createHmac } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { createDb } from "@dpp/kit/internal";
import { runAdmin } from "@dpp/admin";
import { generateAuthorityTokenText, ROUTES } from "@dpp/gateway";
import { startHarness, type Harness, type Tenant } from "./support/harness";
import { publishableTextile } from "./support/fixtures";
import { pdfFile, pngFile } from "./support/files";

jest.setTimeout(180_000);

const STORAGE = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-e2e-documents-"));
const SECRET = "e2e-documents-url-secret";
const MAX = 10_485_760;

let h: Harness;
let t: Tenant;

beforeAll(async () => {
  h = await startHarness("documents", {
    env: {
      DOCUMENTS_STORAGE_DIR: STORAGE,
      DOCUMENTS_URL_SECRET: SECRET,
      DOCUMENTS_SWEEP_INTERVAL_MS: "300",
      DOCUMENTS_PENDING_GRACE_SECONDS: "0",
      DEPENDENCY_RECONCILE_INTERVAL_MS: "300",
      DEPENDENCY_RECONCILE_GRACE_MS: "20000",
    },
  });
  t = await h.tenant("Acme", "pro");
});
afterAll(async () => {
  await h?.close();
  fs.rmSync(STORAGE, { recursive: true, force: true });
});

/** A valid GTIN-13 from a 12-digit stem, with its check digit. */
function gtin13(stem12: string): string {
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += (stem12.charCodeAt(11 - i) - 48) * (i % 2 === 0 ? 3 : 1);
  return stem12 + ((10 - (sum % 10)) % 10);
}
let stem = 590123400000;
const nextGtin = () => gtin13(String(stem++));

const passports = (org = t.organizationId) => `/organizations/${org}/passports`;

async function draft(key = t.testKey, data: Record<string, unknown> = {}, org = t.organizationId) {
  const res = await h.request(passports(org), {
    key,
    body: { category: "textile", data: { ...publishableTextile({ gtin: nextGtin() }), ...data } },
  });
  h.expectStatus(res, 201);
  return res.body.id as string;
}

const attach = (passportId: string, body: unknown, key = t.testKey, headers: Record<string, string> = {}) =>
  h.request(`${passports()}/${passportId}/documents`, { key, body, headers });

const uploadBody = (o: Record<string, unknown> = {}) => ({
  type: "image",
  access_tier: "public",
  file_name: "front.png",
  mime_type: "image/png",
  ...o,
});

/** A plain HTTP PUT, as a browser or curl sends it: no API key. */
const put = (url: string, body: Buffer, headers: Record<string, string>) =>
  fetch(url, { method: "PUT", body, headers });

async function uploaded(passportId: string, file: Buffer, o: Record<string, unknown> = {}, key = t.testKey) {
  const created = await attach(passportId, uploadBody(o), key);
  h.expectStatus(created, 201);
  const res = await put(created.body.upload.url, file, created.body.upload.headers);
  expect(res.status).toBe(200);
  return created.body.id as string;
}

const getDocument = (id: string, key = t.testKey) =>
  h.request(`/organizations/${t.organizationId}/documents/${id}`, { key });

const publish = (id: string, key = t.testKey) =>
  h.request(`${passports()}/${id}/publish`, { key, method: "POST" });

describe("uploads through the returned URL", () => {
  it("takes a real PNG and a real PDF with plain HTTP, makes them ready, links one to a second passport that publishes", async () => {
    const first = await draft();
    const png = pngFile();
    const pdf = pdfFile();

    const created = await attach(first, uploadBody({ display_name: "Front photo", file_size: png.length }));
    h.expectStatus(created, 201);
    expect(created.body).toMatchObject({
      object: "document",
      passport_id: first,
      type: "image",
      access_tier: "public",
      file_name: "front.png",
      display_name: "Front photo",
      mime_type: "image/png",
      upload_state: "pending",
      uploaded_at: null,
      upload: { method: "PUT", headers: { "Content-Type": "image/png" }, max_bytes: MAX },
    });
    expect(Date.parse(created.body.upload.expires_at)).toBeGreaterThan(Date.now());
    const put1 = await put(created.body.upload.url, png, created.body.upload.headers);
    expect(put1.status).toBe(200);
    const ready = await getDocument(created.body.id);
    h.expectStatus(ready, 200);
    expect(ready.body).toMatchObject({ upload_state: "ready", file_size: png.length, upload_problem: null });
    expect(Date.parse(ready.body.uploaded_at)).not.toBeNaN();

    const pdfDoc = await uploaded(first, pdf, {
      type: "certification",
      access_tier: "restricted",
      file_name: "doc.pdf",
      mime_type: "application/pdf",
    });
    expect((await getDocument(pdfDoc)).body).toMatchObject({ upload_state: "ready", file_size: pdf.length });

    // A second passport whose care_instructions are given only by the PDF.
    const second = await draft(t.testKey, {
      care_instructions: undefined,
      care_instructions_document_id: pdfDoc,
    });
    const linked = await attach(second, { document_id: pdfDoc });
    h.expectStatus(linked, 201);
    expect(linked.body).toMatchObject({ id: pdfDoc, passport_id: second, upload_state: "ready" });
    expect(linked.body.upload).toBeUndefined();
    const again = await attach(second, { document_id: pdfDoc });
    h.expectStatus(again, 200);
    expect(again.body.linked_at).toBe(linked.body.linked_at);
    const pub = await publish(second);
    h.expectStatus(pub, 200);
    expect(pub.body.status).toBe("published");

    // The bytes read back through the owner's download URL are the bytes sent.
    const dl = await h.request(`/organizations/${t.organizationId}/documents/${pdfDoc}/download`, {
      key: t.testKey,
    });
    h.expectStatus(dl, 200);
    const got = await fetch(dl.body.url);
    expect([got.status, got.headers.get("content-type")]).toEqual([200, "application/pdf"]);
    expect(Buffer.from(await got.arrayBuffer()).equals(pdf)).toBe(true);

    // The feed: created, ready (document.uploaded), linked.
    const events = await h.request(`/organizations/${t.organizationId}/events?limit=100`, { key: t.testKey });
    h.expectStatus(events, 200);
    const mine = (events.body.data as any[]).filter((e) => e.related?.id === pdfDoc).map((e) => e.type);
    expect(mine).toEqual(
      expect.arrayContaining(["document.created", "document.uploaded", "document.linked"]),
    );
  });

  it("refuses a wrong Content-Type, an oversize body, an expired or tampered URL, and a second PUT once ready", async () => {
    const p = await draft();
    const png = pngFile();
    const created = await attach(p, uploadBody());
    h.expectStatus(created, 201);
    const { url, headers } = created.body.upload as { url: string; headers: Record<string, string> };

    const wrongType = await put(url, png, { "Content-Type": "image/jpeg" });
    expect(wrongType.status).toBe(415);
    expect(((await wrongType.json()) as any).error.code).toBe("content_type_mismatch");

    const oversize = await put(url, Buffer.alloc(MAX + 1, 1), headers);
    expect(oversize.status).toBe(413);
    expect(((await oversize.json()) as any).error.code).toBe("file_too_large");

    const u = new URL(url);
    const tampered = new URL(url);
    tampered.searchParams.set("max_bytes", String(MAX * 10));
    const tamperedRes = await put(tampered.toString(), png, headers);
    expect(tamperedRes.status).toBe(403);
    expect(((await tamperedRes.json()) as any).error.code).toBe("signature_invalid");
    const otherDoc = new URL(url);
    otherDoc.pathname = otherDoc.pathname.replace(/doc_[0-9a-z]+$/, "doc_01jzzzzzzzzzzzzzzzzzzzzzzz");
    expect((await put(otherDoc.toString(), png, headers)).status).toBe(403);

    // A URL signed with the right secret whose time has passed.
    const expires = Math.floor(Date.now() / 1000) - 5;
    const key = u.pathname.replace(/^\/uploads\//, "");
    const sig = createHmac("sha256", SECRET)
      .update(["PUT", key, "image/png", MAX, expires].join("\n"))
      .digest("base64url");
    const expired = new URL(url);
    expired.searchParams.set("expires", String(expires));
    expired.searchParams.set("signature", sig);
    const expiredRes = await put(expired.toString(), png, headers);
    expect(expiredRes.status).toBe(403);
    expect(((await expiredRes.json()) as any).error.code).toBe("url_expired");

    // Nothing of those was kept: still pending.
    expect((await getDocument(created.body.id)).body).toMatchObject({
      upload_state: "pending",
      upload_problem: null,
    });
    expect((await put(url, png, headers)).status).toBe(200);
    expect((await getDocument(created.body.id)).body.upload_state).toBe("ready");
    const second = await put(url, png, headers);
    expect(second.status).toBe(409);
    expect(((await second.json()) as any).error.code).toBe("already_uploaded");
  });

  it("leaves a PNG declared as a PDF not ready, with a reason a client can read, until the right bytes come", async () => {
    const p = await draft();
    const created = await attach(
      p,
      uploadBody({ mime_type: "application/pdf", file_name: "dc.pdf", type: "document" }),
    );
    h.expectStatus(created, 201);
    const res = await put(created.body.upload.url, pngFile(), created.body.upload.headers);
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ upload_state: "pending", problem: { code: "content_mismatch" } });
    const doc = await getDocument(created.body.id);
    expect(doc.body).toMatchObject({
      upload_state: "pending",
      uploaded_at: null,
      upload_problem: {
        code: "content_mismatch",
        message: expect.stringContaining("image/png, not the declared application/pdf"),
      },
    });
    // Reading it is refused until the file is right; the same URL takes the right bytes.
    const dl = await h.request(`/organizations/${t.organizationId}/documents/${created.body.id}/download`, {
      key: t.testKey,
    });
    h.expectStatus(dl, 404);
    expect((await put(created.body.upload.url, pdfFile(), created.body.upload.headers)).status).toBe(200);
    expect((await getDocument(created.body.id)).body).toMatchObject({
      upload_state: "ready",
      upload_problem: null,
    });
  });

  it("replays an upload under its Idempotency-Key, and refuses the key with another body", async () => {
    const p = await draft();
    const headers = { "idempotency-key": `up-${p}` };
    const a = await attach(p, uploadBody(), t.testKey, headers);
    h.expectStatus(a, 201);
    const b = await attach(p, uploadBody(), t.testKey, headers);
    h.expectStatus(b, 201);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect([b.body.id, b.body.upload.url]).toEqual([a.body.id, a.body.upload.url]);
    const c = await attach(p, uploadBody({ file_name: "other.png" }), t.testKey, headers);
    h.expectStatus(c, 409);
    expect(c.body.error.code).toBe("idempotency_conflict");
  });
});

describe("the attach body", () => {
  it("refuses a body mixing both forms with a pointer at each upload field, a form B without its fields, and an unknown id", async () => {
    const p = await draft();
    const mixed = await attach(p, { document_id: "doc_x", type: "image", file_name: "a.png" });
    h.expectStatus(mixed, 422);
    expect(mixed.body.error.details.issues.map((i: any) => i.source.pointer).sort()).toEqual([
      "/file_name",
      "/type",
    ]);
    const partial = await attach(p, { type: "image" });
    h.expectStatus(partial, 422);
    expect(partial.body.error.details.issues.map((i: any) => i.source.pointer)).toEqual([
      "/access_tier",
      "/file_name",
      "/mime_type",
    ]);
    const bad = await attach(p, uploadBody({ type: "video", mime_type: "image/gif" }));
    h.expectStatus(bad, 422);
    expect(bad.body.error.details.issues.map((i: any) => i.source.pointer)).toEqual(["/type", "/mime_type"]);
    const unknown = await attach(p, { document_id: "doc_01jzzzzzzzzzzzzzzzzzzzzzzz" });
    h.expectStatus(unknown, 400);
    expect(unknown.body.error).toMatchObject({
      code: "invalid_document_id",
      details: { issues: [{ source: { pointer: "/document_id" } }] },
    });
    const noPassport = await attach("pp_nope", uploadBody());
    h.expectStatus(noPassport, 404);
  });
});

describe("detaching and the lists", () => {
  it("detaches a document, and a publish that needs it answers document_missing with nothing published", async () => {
    // The category schema names each file-carrying field's document_id_key.
    const schema = await h.request("/categories/textile/schema", { key: null });
    h.expectStatus(schema, 200);
    const care = schema.body.document_fields.find((f: any) => f.field === "care_instructions");
    expect(care).toEqual({
      field: "care_instructions",
      document_id_key: "care_instructions_document_id",
      required_for_publish: true,
      access_tier: "public",
    });
    expect(schema.body.json_schema.properties.care_instructions["x-document-id-key"]).toBe(
      care.document_id_key,
    );
    const holder = await draft();
    const pdfDoc = await uploaded(holder, pdfFile(), {
      type: "document",
      access_tier: "public",
      file_name: "care.pdf",
      mime_type: "application/pdf",
    });
    const p = await draft(t.testKey, { care_instructions: undefined, [care.document_id_key]: pdfDoc });
    h.expectStatus(await attach(p, { document_id: pdfDoc }), 201);
    // Attached with its file ready, the companion satisfies the required field: validation finds it publishable.
    const valid = await h.request(`${passports()}/${p}/validate`, { key: t.testKey, method: "POST" });
    h.expectStatus(valid, 200);
    expect(valid.body.publishable).toBe(true);
    const detached = await h.request(`${passports()}/${p}/documents/${pdfDoc}`, {
      key: t.testKey,
      method: "DELETE",
    });
    h.expectStatus(detached, 200);
    expect(detached.body).toMatchObject({ id: pdfDoc, passport_id: p });
    const twice = await h.request(`${passports()}/${p}/documents/${pdfDoc}`, {
      key: t.testKey,
      method: "DELETE",
    });
    h.expectStatus(twice, 404);
    const refused = await publish(p);
    h.expectStatus(refused, 422);
    expect(refused.body.error).toMatchObject({
      code: "document_missing",
      details: {
        documents: [{ field: "care_instructions", document_id: pdfDoc }],
        issues: [{ source: { pointer: "/data/care_instructions_document_id" } }],
      },
    });
    expect((await h.request(`${passports()}/${p}`, { key: t.testKey })).body.status).toBe("draft");
    // Still in the library, and attached to the first passport.
    expect((await getDocument(pdfDoc)).status).toBe(200);
  });

  it("lists the library and a passport's documents with the type and access_tier filters and cursors", async () => {
    const org = await h.tenant("Lister", "pro");
    const p = await draft(org.testKey, {}, org.organizationId);
    const up = (o: Record<string, unknown>) =>
      h.request(`${passports(org.organizationId)}/${p}/documents`, { key: org.testKey, body: uploadBody(o) });
    const ids: string[] = [];
    for (const o of [
      { type: "image", access_tier: "public" },
      { type: "certification", access_tier: "restricted", mime_type: "application/pdf", file_name: "c.pdf" },
      { type: "image", access_tier: "authority" },
    ]) {
      const r = await up(o);
      h.expectStatus(r, 201);
      ids.push(r.body.id);
    }
    const lib = `/organizations/${org.organizationId}/documents`;
    const page1 = await h.request(`${lib}?limit=2`, { key: org.testKey });
    h.expectStatus(page1, 200);
    expect(page1.body.data.map((d: any) => d.id)).toEqual([ids[2], ids[1]]);
    const page2 = await h.request(`${lib}?limit=2&cursor=${page1.body.next_cursor}`, { key: org.testKey });
    expect([page2.body.data.map((d: any) => d.id), page2.body.has_more]).toEqual([[ids[0]], false]);
    const images = await h.request(`${lib}?type=image`, { key: org.testKey });
    expect(images.body.data.map((d: any) => d.id)).toEqual([ids[2], ids[0]]);
    const onPassport = `${passports(org.organizationId)}/${p}/documents`;
    const restricted = await h.request(`${onPassport}?access_tier=restricted`, { key: org.testKey });
    h.expectStatus(restricted, 200);
    expect(restricted.body.data.map((d: any) => [d.id, d.passport_id])).toEqual([[ids[1], p]]);
    const p1 = await h.request(`${onPassport}?limit=1`, { key: org.testKey });
    const p2 = await h.request(`${onPassport}?limit=1&cursor=${p1.body.next_cursor}`, { key: org.testKey });
    expect([p1.body.data[0].id, p2.body.data[0].id]).toEqual([ids[2], ids[1]]);
    h.expectStatus(await h.request(`${lib}?access_tier=secret`, { key: org.testKey }), 400);
    // Another organization sees none of them.
    const other = await h.request(`/organizations/${t.organizationId}/documents/${ids[0]}`, {
      key: t.testKey,
    });
    h.expectStatus(other, 404);
  });
});

describe("storage at publish", () => {
  it("answers 503 storage_unavailable with Retry-After when storage cannot confirm the files, and publishes nothing", async () => {
    const p = await draft();
    await uploaded(p, pngFile());
    const away = `${STORAGE}.away`;
    fs.renameSync(STORAGE, away);
    try {
      const res = await publish(p);
      h.expectStatus(res, 503);
      expect(res.body.error.code).toBe("storage_unavailable");
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
      expect((await h.request(`${passports()}/${p}`, { key: t.testKey })).body.status).toBe("draft");
    } finally {
      fs.renameSync(away, STORAGE);
    }
    h.expectStatus(await publish(p), 200);
  });
});

describe("reads by audience", () => {
  it("gives a public reader a published passport's public file only, whatever id or URL it guesses", async () => {
    const p = await draft(t.liveKey);
    const png = pngFile(8, [200, 10, 10]);
    const pub = await uploaded(p, png, {}, t.liveKey);
    const restricted = await uploaded(
      p,
      pdfFile("Composition"),
      { type: "certification", access_tier: "restricted", file_name: "r.pdf", mime_type: "application/pdf" },
      t.liveKey,
    );
    const authority = await uploaded(
      p,
      pdfFile("Test report"),
      { type: "document", access_tier: "authority", file_name: "a.pdf", mime_type: "application/pdf" },
      t.liveKey,
    );
    const testModePublic = await uploaded(await draft(), pngFile());
    const publicRead = (id: string, org = t.organizationId) =>
      h.request(`/public/organizations/${org}/documents/${id}/download`, { key: null });

    // Before publication nothing is public.
    h.expectStatus(await publicRead(pub), 404);
    h.expectStatus(await publish(p, t.liveKey), 200);
    const ok = await publicRead(pub);
    h.expectStatus(ok, 200);
    expect(ok.body).toMatchObject({
      object: "document_download",
      access_tier: "public",
      mime_type: "image/png",
    });
    const bytes = await fetch(ok.body.url);
    expect(Buffer.from(await bytes.arrayBuffer()).equals(png)).toBe(true);

    for (const id of [restricted, authority, testModePublic, "doc_01jzzzzzzzzzzzzzzzzzzzzzzz", "../x"]) {
      const res = await publicRead(id);
      h.expectStatus(res, 404);
      expect(res.body.error.code).toBe("resource_not_found");
    }
    h.expectStatus(await publicRead(pub, "org_other"), 404);
    // The public URL rewritten to another document's key is refused (the signature covers the key).
    for (const id of [restricted, authority]) {
      const guess = new URL(ok.body.url);
      guess.pathname = guess.pathname.replace(pub, id);
      expect((await fetch(guess)).status).toBe(403);
    }
    // A key presented to the public route changes nothing.
    h.expectStatus(
      await h.request(`/public/organizations/${t.organizationId}/documents/${restricted}/download`, {
        key: t.liveKey,
      }),
      404,
    );

    // The owning organization's key with documents:read reads every tier, through a short-lived URL.
    for (const id of [restricted, authority]) {
      const dl = await h.request(`/organizations/${t.organizationId}/documents/${id}/download`, {
        key: t.liveKey,
      });
      h.expectStatus(dl, 200);
      expect(Date.parse(dl.body.expires_at) - Date.now()).toBeLessThanOrEqual(300_000);
      expect((await fetch(dl.body.url)).status).toBe(200);
    }
    // A key without documents:read, and another organization's key, get nothing.
    const noRead = await h.admin.createKey({
      organizationId: t.organizationId,
      livemode: true,
      scopes: ["passports:read"],
    });
    const refused = await h.request(`/organizations/${t.organizationId}/documents/${restricted}/download`, {
      key: noRead.key,
    });
    h.expectStatus(refused, 403);
    expect(refused.body.error.code).toBe("insufficient_scope");
    const stranger = await h.tenant("Stranger", "pro");
    h.expectStatus(
      await h.request(`/organizations/${t.organizationId}/documents/${restricted}/download`, {
        key: stranger.liveKey,
      }),
      404,
    );
  });
});

describe("records that depend on a document", () => {
  it("keeps a document cited by a unit reading attached to that passport (document_feeds_reading), registered once per key", async () => {
    const battery = await h.request(passports(), { key: t.testKey, body: { category: "battery" } });
    h.expectStatus(battery, 201);
    const p = battery.body.id as string;
    const created = await h.request(`${passports()}/${p}/units`, {
      key: t.testKey,
      body: { units: [{ unit_serial: "CELL-1" }] },
    });
    h.expectStatus(created, 201);
    const unit = created.body.data[0].id as string;
    const report = await uploaded(p, pdfFile("State of health test"), {
      type: "certification",
      access_tier: "restricted",
      file_name: "soh.pdf",
      mime_type: "application/pdf",
    });
    // The same document attached to a second passport, where no reading cites it.
    const other = await draft();
    h.expectStatus(await attach(other, { document_id: report }), 201);
    const unattached = await uploaded(await draft(), pdfFile("Elsewhere"), {
      type: "certification",
      access_tier: "restricted",
      file_name: "x.pdf",
      mime_type: "application/pdf",
    });

    const reading = (document_id: string, key: string) =>
      h.request(`${passports()}/${p}/units/${unit}/readings`, {
        key: t.testKey,
        headers: { "Idempotency-Key": key },
        body: {
          field: "state_of_health",
          value: { value: 97, unit: "%" },
          source: "measurement",
          observed_on: "2026-01-05",
          document_id,
        },
      });
    // A document of the library that is not attached to this passport cannot support the reading.
    const refused = await reading(unattached, "soh-refused");
    h.expectStatus(refused, 400);
    expect(refused.body.error.code).toBe("unit_reading_document_unavailable");

    const first = await reading(report, "soh-1");
    h.expectStatus(first, 201);
    expect(first.body.document_id).toBe(report);
    const replay = await reading(report, "soh-1");
    h.expectStatus(replay, 201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body.id).toBe(first.body.id);

    const documentsDb = createDb<any>({ url: h.db.url, schema: "documents", applicationName: "e2e", max: 1 });
    try {
      const deps = await documentsDb
        .selectFrom("document_dependency")
        .select(["kind", "reference", "passport_id"])
        .where("document_id", "=", report)
        .execute();
      // One record, naming the reading that was written.
      expect(deps).toEqual([{ kind: "reading", reference: first.body.id, passport_id: p }]);
    } finally {
      await documentsDb.destroy();
    }

    const detach = (passportId: string) =>
      h.request(`${passports()}/${passportId}/documents/${report}`, { key: t.testKey, method: "DELETE" });
    const kept = await detach(p);
    h.expectStatus(kept, 409);
    expect(kept.body.error).toMatchObject({
      code: "document_feeds_reading",
      details: { document_id: report, readings: [first.body.id] },
    });
    const still = await h.request(`${passports()}/${p}/documents`, { key: t.testKey });
    expect(still.body.data.map((d: any) => d.id)).toContain(report);
    // Where no reading cites it, it is detached as before.
    h.expectStatus(await detach(other), 200);
  });
});

describe("reading dependencies whose reading was never written", () => {
  it("are deleted by the reconciler once past their grace, so the document detaches; a written reading's stay", async () => {
    const battery = await h.request(passports(), { key: t.testKey, body: { category: "battery" } });
    h.expectStatus(battery, 201);
    const p = battery.body.id as string;
    const created = await h.request(`${passports()}/${p}/units`, {
      key: t.testKey,
      body: { units: [{ unit_serial: "CELL-9" }] },
    });
    h.expectStatus(created, 201);
    const unit = created.body.data[0].id as string;
    const file = { type: "certification", access_tier: "restricted", mime_type: "application/pdf" };
    const cited = await uploaded(p, pdfFile("Cited"), { ...file, file_name: "cited.pdf" });
    const orphaned = await uploaded(p, pdfFile("Orphaned"), { ...file, file_name: "orphaned.pdf" });
    const reading = await h.request(`${passports()}/${p}/units/${unit}/readings`, {
      key: t.testKey,
      headers: { "Idempotency-Key": "soh-reconcile" },
      body: {
        field: "state_of_health",
        value: { value: 91, unit: "%" },
        source: "measurement",
        observed_on: "2026-02-01",
        document_id: cited,
      },
    });
    h.expectStatus(reading, 201);

    const documentsDb = createDb<any>({ url: h.db.url, schema: "documents", applicationName: "e2e", max: 1 });
    const detach = (documentId: string) =>
      h.request(`${passports()}/${p}/documents/${documentId}`, { key: t.testKey, method: "DELETE" });
    try {
      // What a reading leaves when it registered its dependency and its write then failed (a call without an
      // Idempotency-Key whose process died before the reading committed): a dependency naming no reading.
      await documentsDb
        .insertInto("document_dependency")
        .values({
          organization_id: t.organizationId,
          livemode: false,
          passport_id: p,
          document_id: orphaned,
          kind: "reading",
          reference: "rdg_01m8zzzzzzzzzzzzzzzzzzzzzz",
        })
        .execute();
      // Within the grace it holds the document like any reading's.
      const held = await detach(orphaned);
      h.expectStatus(held, 409);
      expect(held.body.error.code).toBe("document_feeds_reading");

      // Past the grace (both dependencies made older), the reconciler asks variants-units which readings exist.
      await sql`update document_dependency set created_at = now() - interval '1 hour'
        where organization_id = ${t.organizationId} and passport_id = ${p}`.execute(documentsDb);
      const until = Date.now() + 20_000;
      let res = await detach(orphaned);
      while (res.status === 409 && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 200));
        res = await detach(orphaned);
      }
      h.expectStatus(res, 200);
      const left = await documentsDb
        .selectFrom("document_dependency")
        .select(["document_id", "reference"])
        .where("organization_id", "=", t.organizationId)
        .where("passport_id", "=", p)
        .execute();
      expect(left).toEqual([{ document_id: cited, reference: reading.body.id }]);
    } finally {
      await documentsDb.destroy();
    }
    const kept = await detach(cited);
    h.expectStatus(kept, 409);
    expect(kept.body.error).toMatchObject({
      code: "document_feeds_reading",
      details: { readings: [reading.body.id] },
    });
  });
});

describe("an authority token (docs/decisions/0058)", () => {
  /** The admin CLI as an operator runs it, on the stack's database. */
  async function cli(argv: string[]): Promise<any> {
    const before = process.env.DATABASE_URL;
    process.env.DATABASE_URL = h.db.url;
    try {
      return await runAdmin(argv, "/nonexistent");
    } finally {
      if (before === undefined) delete process.env.DATABASE_URL;
      else process.env.DATABASE_URL = before;
    }
  }
  const issue = (org: string, mode: "test" | "live", expiresIn = "3600") =>
    cli([
      "authority:issue",
      "--org",
      org,
      "--mode",
      mode,
      "--name",
      "Market surveillance, inspector 7",
      "--expires-in",
      expiresIn,
    ]);
  const authorityRead = (id: string, token: string | null, org = t.organizationId) =>
    h.request(`/authority/organizations/${org}/documents/${id}/download`, { key: token });

  it("reads its organization's authority-tier files and nothing else: no other tier, organization, mode or route", async () => {
    const p = await draft(t.liveKey);
    const authorityPdf = pdfFile("Test report for the authority");
    const authority = await uploaded(
      p,
      authorityPdf,
      { type: "document", access_tier: "authority", file_name: "a.pdf", mime_type: "application/pdf" },
      t.liveKey,
    );
    const restricted = await uploaded(
      p,
      pdfFile("Restricted"),
      { type: "certification", access_tier: "restricted", file_name: "r.pdf", mime_type: "application/pdf" },
      t.liveKey,
    );
    const pub = await uploaded(p, pngFile(), {}, t.liveKey);
    h.expectStatus(await publish(p, t.liveKey), 200);
    const testModeAuthority = await uploaded(await draft(), pdfFile("Test mode"), {
      type: "document",
      access_tier: "authority",
      file_name: "t.pdf",
      mime_type: "application/pdf",
    });
    const other = await h.tenant("Other brand", "pro");
    const otherPassport = await draft(other.liveKey, {}, other.organizationId);
    const otherCreated = await h.request(`${passports(other.organizationId)}/${otherPassport}/documents`, {
      key: other.liveKey,
      body: uploadBody({
        type: "document",
        access_tier: "authority",
        file_name: "o.pdf",
        mime_type: "application/pdf",
      }),
    });
    h.expectStatus(otherCreated, 201);
    expect(
      (await put(otherCreated.body.upload.url, pdfFile("Other"), otherCreated.body.upload.headers)).status,
    ).toBe(200);
    const otherAuthority = otherCreated.body.id as string;

    const issued = await issue(t.organizationId, "live");
    expect(issued.token).toMatch(/^dpp_at_live_[0-9A-Za-z]{38}$/);
    expect(issued.record).toMatchObject({
      object: "authority_token",
      organization_id: t.organizationId,
      livemode: true,
      revoked_at: null,
    });
    // Only a digest is kept.
    const stored = await h.gatewayDb
      .selectFrom("authority_token")
      .selectAll()
      .where("id", "=", issued.record.id)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(stored)).not.toContain(issued.token);
    const token = issued.token as string;

    const ok = await authorityRead(authority, token);
    h.expectStatus(ok, 200);
    expect(ok.body).toMatchObject({
      object: "document_download",
      document_id: authority,
      access_tier: "authority",
    });
    expect(Date.parse(ok.body.expires_at) - Date.now()).toBeLessThanOrEqual(300_000);
    const file = await fetch(ok.body.url);
    expect(Buffer.from(await file.arrayBuffer()).equals(authorityPdf)).toBe(true);
    // The SDK, made with the token, reads it the same way.
    const viaSdk = await h.sdk(token).organization(t.organizationId).documents.authorityDownload(authority);
    expect([viaSdk.document_id, viaSdk.access_tier]).toEqual([authority, "authority"]);

    // Another tier, the other mode, an unknown id: the same 404.
    for (const id of [restricted, pub, testModeAuthority, "doc_01jzzzzzzzzzzzzzzzzzzzzzzz"]) {
      const res = await authorityRead(id, token);
      h.expectStatus(res, 404);
      expect(res.body.error.code).toBe("resource_not_found");
    }
    // Another organization, even naming that organization's own authority file.
    const cross = await authorityRead(otherAuthority, token, other.organizationId);
    h.expectStatus(cross, 404);
    expect(cross.body.error.code).toBe("organization_not_found_or_not_granted");
    h.expectStatus(await authorityRead(otherAuthority, token), 404);
    // The read URL rewritten to the restricted file's key fails its signature.
    const guess = new URL(ok.body.url);
    guess.pathname = guess.pathname.replace(authority, restricted);
    expect((await fetch(guess)).status).toBe(403);

    // Every other operation that looks at a credential refuses the token.
    const accepted: string[] = [];
    let tried = 0;
    for (const r of ROUTES) {
      if (r.auth === "none" || r.auth === "authority") continue;
      const path = r.path
        .replace("{organization}", t.organizationId)
        .replace("{category}", "textile")
        .replace("{id}", r.path.includes("/documents/{id}") ? authority : p)
        .replace(/\{\w+\}/g, authority);
      const res = await h.request(path, {
        method: r.method,
        key: token,
        body: r.method === "POST" || r.method === "PATCH" ? {} : undefined,
      });
      tried++;
      if (res.status !== 401 || res.body.error.code !== "invalid_key")
        accepted.push(`${r.method} ${r.path}: ${res.status}`);
    }
    expect(accepted).toEqual([]);
    expect(tried).toBeGreaterThan(40);
    // The public route does not look at credentials: the token is no way to the authority file there.
    h.expectStatus(await authorityRead(authority, null), 401);
    h.expectStatus(
      await h.request(`/public/organizations/${t.organizationId}/documents/${authority}/download`, {
        key: token,
      }),
      404,
    );
    // And the authority route takes no API key, not even the owner's.
    const withKey = await authorityRead(authority, t.liveKey);
    h.expectStatus(withKey, 401);
    expect(withKey.body.error.code).toBe("invalid_key");

    // A test-mode token reads the test-mode authority file only.
    const testToken = (await issue(t.organizationId, "test")).token as string;
    h.expectStatus(await authorityRead(testModeAuthority, testToken), 200);
    h.expectStatus(await authorityRead(authority, testToken), 404);

    // Revoked: refused from the next request on.
    const revoked = await cli(["authority:revoke", "--id", issued.record.id]);
    expect(revoked.revoked_at).not.toBeNull();
    const afterRevoke = await authorityRead(authority, token);
    h.expectStatus(afterRevoke, 401);
    expect(afterRevoke.body.error.code).toBe("key_revoked");
  });

  it("is refused once expired, is never issued without an expiry or for longer than 90 days, and a forged one is unknown", async () => {
    const p = await draft(t.liveKey);
    const authority = await uploaded(
      p,
      pdfFile("Expiring"),
      { type: "document", access_tier: "authority", file_name: "e.pdf", mime_type: "application/pdf" },
      t.liveKey,
    );
    const short = (await issue(t.organizationId, "live", "2")).token as string;
    h.expectStatus(await authorityRead(authority, short), 200);
    await new Promise((r) => setTimeout(r, 2_200));
    const expired = await authorityRead(authority, short);
    h.expectStatus(expired, 401);
    expect(expired.body.error.code).toBe("key_expired");

    await expect(
      cli(["authority:issue", "--org", t.organizationId, "--mode", "live", "--name", "x"]),
    ).rejects.toThrow(/expires/);
    await expect(issue(t.organizationId, "live", String(91 * 86400))).rejects.toMatchObject({
      code: "validation_failed",
    });
    await expect(issue("org_nope", "live")).rejects.toMatchObject({ code: "resource_not_found" });
    const forged = await authorityRead(authority, generateAuthorityTokenText(true));
    h.expectStatus(forged, 401);
    expect(forged.body.error).toMatchObject({ code: "invalid_key", details: { reason: "unknown" } });
  });
});

describe("plan and capability", () => {
  it("counts the library in the capability and refuses an upload past document_limit", async () => {
    const trial = await h.tenant("Trial", "trial");
    const capability = async () => {
      const res = await h.request(`/organizations/${trial.organizationId}/capabilities`, {
        key: trial.testKey,
      });
      h.expectStatus(res, 200);
      return res.body.data.find((c: any) => c.id === "document_upload");
    };
    expect((await capability()).detail).toEqual({ document_limit: 20, documents_used: 0 });
    const p = await draft(trial.testKey, {}, trial.organizationId);
    const up = () =>
      h.request(`${passports(trial.organizationId)}/${p}/documents`, {
        key: trial.testKey,
        body: uploadBody(),
      });
    h.expectStatus(await up(), 201);
    expect((await capability()).detail).toEqual({ document_limit: 20, documents_used: 1 });
    // 19 more, as the library keeps them.
    const db = createDb<any>({ url: h.db.url, schema: "documents", applicationName: "e2e", max: 1 });
    try {
      await sql`insert into document (id, organization_id, livemode, type, access_tier, file_name, display_name,
          mime_type, upload_state, upload_expires_at, storage_key)
        select 'doc_fill' || g, ${trial.organizationId}, false, 'image', 'public', 'f.png', 'f.png', 'image/png',
          'ready', now(), 'x/test/fill' || g
        from generate_series(1, 19) g`.execute(db);
    } finally {
      await db.destroy();
    }
    const refused = await up();
    h.expectStatus(refused, 402);
    expect(refused.body.error).toMatchObject({
      code: "document_limit_reached",
      details: { document_limit: 20, documents_used: 20 },
    });
    const c = await capability();
    expect([c.allowed, c.detail.documents_used, c.problems.map((x: any) => x.code)]).toEqual([
      false,
      20,
      ["document_limit_reached"],
    ]);
  });
});

describe("the sweep", () => {
  it("removes an upload still pending after its URL expired", async () => {
    const p = await draft();
    const created = await attach(p, uploadBody());
    h.expectStatus(created, 201);
    const db = createDb<any>({ url: h.db.url, schema: "documents", applicationName: "e2e", max: 1 });
    try {
      await sql`update document set upload_expires_at = now() - interval '1 second' where id = ${created.body.id}`.execute(
        db,
      );
    } finally {
      await db.destroy();
    }
    const deadline = Date.now() + 15_000;
    let status = 200;
    while (Date.now() < deadline && status !== 404) {
      await new Promise((r) => setTimeout(r, 300));
      status = (await getDocument(created.body.id)).status;
    }
    expect(status).toBe(404);
    const list = await h.request(`${passports()}/${p}/documents`, { key: t.testKey });
    expect(list.body.data).toEqual([]);
  });
});

describe("the SDK", () => {
  it("creates a document and PUTs the file in one call, links, lists with iterators and detaches", async () => {
    const dpp = h.sdk(t.testKey).organization(t.organizationId);
    const p = await draft();
    const other = await draft();
    const png = pngFile(4);
    const doc = await dpp.passportDocuments.uploadFile(p, {
      type: "image",
      access_tier: "public",
      file_name: "sdk.png",
      mime_type: "image/png",
      file: png,
    });
    expect(doc).toMatchObject({ upload_state: "ready", file_size: png.length });
    const linked = await dpp.passportDocuments.link(other, doc.id);
    expect([linked.id, linked.lastResponse.status]).toEqual([doc.id, 201]);
    expect((await dpp.passportDocuments.link(other, doc.id)).lastResponse.status).toBe(200);
    const onPassport: string[] = [];
    for await (const d of dpp.passportDocuments.list(other, { limit: 1 })) onPassport.push(d.id);
    expect(onPassport).toEqual([doc.id]);
    const images: string[] = [];
    for await (const d of dpp.documents.list({ type: "image", limit: 2 })) images.push(d.id);
    expect(images).toContain(doc.id);
    expect((await dpp.documents.download(doc.id)).url).toMatch(/^http/);
    expect((await dpp.passportDocuments.detach(other, doc.id)).passport_id).toBe(other);
    // The URL's refusal is a typed error.
    await expect(
      dpp.passportDocuments.uploadFile(p, {
        type: "image",
        access_tier: "public",
        file_name: "big.png",
        mime_type: "image/png",
        file: Buffer.alloc(MAX + 1),
      }),
    ).rejects.toMatchObject({ name: "DppError", code: "validation_failed" });
  });
});
