/**
 * DocumentsService over gRPC, on rows written as its writes leave them (uploads and links need passport, which the
 * e2e tests run): lists with their filters and cursors, the tenant's own only; detaching refused while records
 * depend on a document; publishing's check (companions no longer attached, storage that does not answer).
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
