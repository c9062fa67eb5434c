/** A reading's cited document: registered with the documents service, the reading named by what it recorded. */
import { ApiError } from "@dpp/contract";
import type { RequestContext } from "@dpp/kit";
import type { VariantsUnitsApp } from "./deps";
import { citeDocument } from "./reading-documents";

const ctx = (): RequestContext => ({
  requestId: "req_000000000000000000000001",
  organizationId: "org_1",
  livemode: false,
  keyId: "key_1",
  credentialKind: "secret",
});

it("registers the dependency with documents and answers the reference documents recorded, not its own draw", async () => {
  const asked: { req: Record<string, unknown>; context: RequestContext | undefined }[] = [];
  const app = {
    documents: {
      registerDependency: async (req: Record<string, unknown>, o: { context?: RequestContext }) => {
        asked.push({ req, context: o.context });
        return { reference: "rdg_recorded_first", replayed: true };
      },
    },
  } as unknown as VariantsUnitsApp;
  const call = { ctx: ctx(), deadline: Date.now() + 5_000 };
  await expect(citeDocument(app, call, "pp_1", "doc_1")).resolves.toBe("rdg_recorded_first");
  expect(asked).toHaveLength(1);
  expect(asked[0]!.req).toMatchObject({ passportId: "pp_1", documentId: "doc_1", kind: "reading" });
  expect(asked[0]!.req.reference).toMatch(/^rdg_/);
  expect(typeof asked[0]!.req.key).toBe("string");
  // The call is the reading's tenant, without an Idempotency-Key of its own: the item's key is the effect key.
  expect(asked[0]!.context).toMatchObject({ organizationId: "org_1", livemode: false });
  expect(asked[0]!.context?.idempotency).toBeUndefined();
});

it("refuses a cited document when no documents service runs, and passes on documents' refusal", async () => {
  const call = { ctx: ctx(), deadline: Date.now() + 5_000 };
  const none = await citeDocument({} as VariantsUnitsApp, call, "pp_1", "doc_1").catch((e: unknown) => e);
  expect(none).toBeInstanceOf(ApiError);
  expect((none as ApiError).code).toBe("unit_reading_document_unavailable");
  const refusing = {
    documents: {
      registerDependency: async () => {
        throw new ApiError("unit_reading_document_unavailable", "No document doc_2 can support a reading.");
      },
    },
  } as unknown as VariantsUnitsApp;
  const refused = await citeDocument(refusing, call, "pp_1", "doc_2").catch((e: unknown) => e);
  expect((refused as ApiError).code).toBe("unit_reading_document_unavailable");
});
