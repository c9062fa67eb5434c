/**
 * DocumentsService over gRPC, on rows written as its writes leave them (uploads and links need passport, which the
 * e2e tests run): lists with their filters and cursors, the tenant's own only; detaching refused while records
 * depend on a document (registered once per item key); an authority's reads; publishing's check (companions no longer attached, storage that does not answer).
 */
import fs from "node:fs";
import { newId } from "@dpp/contract";
import { newTenant, registerRefusalMatchers, tenantContext, type Tenant } from "@dpp/kit/testing";
import { startHarness, type Harness } from "../harness";

registerRefusalMatchers();

let h: Harness;

beforeAll(async () => {
  h = await startHarness("documents");
});
afterAll(async () => {
  await h?.close();
});

async function insert(t: Tenant, o: { type?: string; tier?: string; state?: string; passportId?: string }) {
  const id = newId("doc");
  await h.sql
    .insertInto("document")
    .values({
      id,
      organization_id: t.organizationId,
      livemode: t.livemode,
      type: o.type ?? "image",
      access_tier: o.tier ?? "public",
      file_name: `${id}.png`,
      display_name: `${id}.png`,
      mime_type: "image/png",
      file_size: "10",
      upload_state: o.state ?? "ready",
      uploaded_at: o.state === "pending" ? null : new Date(),
      upload_expires_at: new Date(Date.now() + 60_000),
      storage_key: `${t.organizationId}/${t.livemode ? "live" : "test"}/${id}`,
    })
    .execute();
  if (o.passportId)
    await h.sql
      .insertInto("document_link")
      .values({
        organization_id: t.organizationId,
        livemode: t.livemode,
        passport_id: o.passportId,
        document_id: id,
      })
      .execute();
  return id;
}

it("lists the library and a passport's documents newest first, filtered, a page at a time, the tenant's only", async () => {
  const t = newTenant();
  const a = await insert(t, { type: "image", tier: "public", passportId: "pp_1" });
  const b = await insert(t, { type: "certification", tier: "restricted", passportId: "pp_1" });
  const c = await insert(t, { type: "image", tier: "authority" });
  await insert(newTenant(), { type: "image" });
  const ctx = tenantContext(t);
  const first = await h.client.listDocuments({ limit: 2 }, { context: ctx });
  expect(first.documents.map((d) => d.id)).toEqual([c, b]);
  const second = await h.client.listDocuments({ limit: 2, cursor: first.nextCursor }, { context: ctx });
  expect([second.documents.map((d) => d.id), second.hasMore]).toEqual([[a], false]);
  const images = await h.client.listDocuments({ type: "image" }, { context: ctx });
  expect(images.documents.map((d) => d.id)).toEqual([c, a]);
  const restricted = await h.client.listDocuments({ accessTier: "restricted" }, { context: ctx });
  expect(restricted.documents.map((d) => d.id)).toEqual([b]);
  // A cursor of one filter is refused under another.
  await expect(
    h.client.listDocuments({ limit: 2, type: "image", cursor: first.nextCursor }, { context: ctx }),
  ).rejects.toBeRefusedWith("cursor_invalid");
  await expect(h.client.listDocuments({ type: "video" }, { context: ctx })).rejects.toBeRefusedWith(
    "invalid_request",
  );
  expect((await h.client.getUsage({}, { context: ctx })).documentsUsed).toBe(3);
});

it("refuses to detach a document that passport values or battery readings depend on, and detaches it after", async () => {
  const t = newTenant();
  const ctx = tenantContext(t);
  const fed = await insert(t, { passportId: "pp_2" });
  const read = await insert(t, { passportId: "pp_2" });
  const dep = (document_id: string, kind: string) =>
    h.sql
      .insertInto("document_dependency")
      .values({
        organization_id: t.organizationId,
        livemode: t.livemode,
        passport_id: "pp_2",
        document_id,
        kind,
        reference: "rec_1",
      })
      .execute();
  await dep(fed, "extraction");
  await dep(read, "reading");
  await expect(
    h.client.unlinkDocument({ passportId: "pp_2", documentId: fed }, { context: ctx }),
  ).rejects.toBeRefusedWith("document_feeds_extraction");
  await expect(
    h.client.unlinkDocument({ passportId: "pp_2", documentId: read }, { context: ctx }),
  ).rejects.toBeRefusedWith("document_feeds_reading");
  expect((await h.rowCounts(t)).document_link).toBe(2);
  await h.sql.deleteFrom("document_dependency").where("document_id", "=", read).execute();
  const out = await h.client.unlinkDocument({ passportId: "pp_2", documentId: read }, { context: ctx });
  expect([out.document!.id, out.document!.passportId]).toEqual([read, "pp_2"]);
  await expect(
    h.client.unlinkDocument({ passportId: "pp_2", documentId: read }, { context: ctx }),
  ).rejects.toBeRefusedWith("resource_not_found");
});

it("registers a record's dependency once per item key, refuses a document not attached or not ready, and keeps the document attached", async () => {
  const t = newTenant();
  const ctx = tenantContext(t);
  const doc = await insert(t, { passportId: "pp_4" });
  const elsewhere = await insert(t, { passportId: "pp_other" });
  const pending = await insert(t, { passportId: "pp_4", state: "pending" });
  const register = (o: { key: string; documentId: string; kind: string; reference: string }) =>
    h.client.registerDependency({ passportId: "pp_4", ...o }, { context: ctx });

  const first = await register({ key: "effect-1", documentId: doc, kind: "reading", reference: "rdg_1" });
  expect([first.document!.id, first.reference, first.replayed]).toEqual([doc, "rdg_1", false]);
  // The same item again (a retried call, whose new run drew another reference) answers what was recorded.
  const again = await register({ key: "effect-1", documentId: doc, kind: "reading", reference: "rdg_2" });
  expect([again.reference, again.replayed]).toEqual(["rdg_1", true]);
  // The key with another document is another item: refused.
  await expect(
    register({ key: "effect-1", documentId: pending, kind: "reading", reference: "rdg_1" }),
  ).rejects.toBeRefusedWith("idempotency_conflict");
  expect((await h.rowCounts(t)).document_dependency).toBe(1);

  // Attached elsewhere only, not ready, another tenant's, or unknown: nothing recorded.
  for (const documentId of [elsewhere, pending, "doc_01jzzzzzzzzzzzzzzzzzzzzzzz"])
    await expect(
      register({ key: `effect-${documentId}`, documentId, kind: "reading", reference: "rdg_3" }),
    ).rejects.toBeRefusedWith("unit_reading_document_unavailable");
  await expect(
    h.client.registerDependency(
      { passportId: "pp_4", key: "effect-x", documentId: doc, kind: "reading", reference: "rdg_4" },
      { context: tenantContext(newTenant()) },
    ),
  ).rejects.toBeRefusedWith("unit_reading_document_unavailable");
  await expect(
    register({ key: "effect-e", documentId: elsewhere, kind: "extraction", reference: "ext_1" }),
  ).rejects.toBeRefusedWith("invalid_document_id");
  await expect(
    register({ key: "effect-k", documentId: doc, kind: "opinion", reference: "x" }),
  ).rejects.toBeRefusedWith("validation_failed");
  expect((await h.rowCounts(t)).document_dependency).toBe(1);

  await expect(
    h.client.unlinkDocument({ passportId: "pp_4", documentId: doc }, { context: ctx }),
  ).rejects.toBeRefusedWith("document_feeds_reading");
  // An extraction of the passport's values from a document keeps it attached as well, and is named first.
  await register({ key: "effect-2", documentId: doc, kind: "extraction", reference: "ext_9" });
  await expect(
    h.client.unlinkDocument({ passportId: "pp_4", documentId: doc }, { context: ctx }),
  ).rejects.toBeRefusedWith("document_feeds_extraction");
  // Detaching from another passport, where nothing depends on it, is not held back.
  await h.client.unlinkDocument({ passportId: "pp_other", documentId: elsewhere }, { context: ctx });
});

it("answers an authority's call with authority-tier files only, and nothing but GetDownload", async () => {
  const t = newTenant();
  const authority = tenantContext(t, { credentialKind: "authority", keyId: "atk_1" });
  const files: Record<string, string> = {};
  for (const tier of ["public", "restricted", "authority"]) {
    const id = await insert(t, { tier, passportId: "pp_5" });
    const key = `${t.organizationId}/${t.livemode ? "live" : "test"}/${id}`;
    fs.mkdirSync(`${h.storageDir}/${key.split("/").slice(0, 2).join("/")}`, { recursive: true });
    fs.writeFileSync(
      `${h.storageDir}/${key}`,
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2]),
    );
    files[tier] = id;
  }
  const ok = await h.client.getDownload({ documentId: files.authority! }, { context: authority });
  expect(ok.accessTier).toBe("authority");
  for (const tier of ["public", "restricted"])
    await expect(
      h.client.getDownload({ documentId: files[tier]! }, { context: authority }),
    ).rejects.toBeRefusedWith("resource_not_found");
  // The brand's own key reads every tier.
  const own = await h.client.getDownload({ documentId: files.restricted! }, { context: tenantContext(t) });
  expect(own.accessTier).toBe("restricted");
  await expect(h.client.listDocuments({}, { context: authority })).rejects.toBeRefusedWith(
    "resource_not_found",
  );
  await expect(
    h.client.getDocument({ documentId: files.authority! }, { context: authority }),
  ).rejects.toBeRefusedWith("resource_not_found");
});

it("names the companions no longer attached, and answers storage_unavailable when storage cannot confirm the files", async () => {
  const t = newTenant();
  const ctx = tenantContext(t);
  const attached = await insert(t, { passportId: "pp_3" });
  const detached = await insert(t, {});
  const companions = [
    {
      field: "declaration_of_conformity",
      key: "declaration_of_conformity_document_id",
      documentId: detached,
    },
  ];
  const key = `${t.organizationId}/${t.livemode ? "live" : "test"}/${attached}`;
  fs.mkdirSync(`${h.storageDir}/${key.split("/").slice(0, 2).join("/")}`, { recursive: true });
  fs.writeFileSync(
    `${h.storageDir}/${key}`,
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2]),
  );
  const res = await h.client.checkPublish({ passportId: "pp_3", companions }, { context: ctx });
  expect([res.missing.map((m) => m.documentId), res.confirmed]).toEqual([[detached], 1]);
  // The storage volume is gone: nothing can be confirmed.
  fs.renameSync(h.storageDir, `${h.storageDir}.away`);
  try {
    await expect(
      h.client.checkPublish({ passportId: "pp_3", companions: [] }, { context: ctx }),
    ).rejects.toBeRefusedWith("storage_unavailable");
  } finally {
    fs.renameSync(`${h.storageDir}.away`, h.storageDir);
  }
});
