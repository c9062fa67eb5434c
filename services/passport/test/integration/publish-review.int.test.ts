/**
 * Publish and a person's approval ask variants-units through the same check (app/variants-units-checks.ts): here
 * with a stand-in client whose facts the test sets, so the approval's recorded fingerprint is checked against
 * the rows as they are when the person decides, not as they were when the connector asked.
 */
import { defaultPrePublishChecks } from "../../src/domain/prepublish";
import {
  variantsUnitsPrePublishCheck,
  type PublishFacts,
  type VariantsUnitsClient,
} from "../../src/app/variants-units-checks";
import { passportV1 } from "@dpp/proto";
import { context, publishableTextile, refusal, startHarness, testTenant, type Harness } from "../harness";

let h: Harness;
const REVIEWED = "ab".repeat(32);
let facts: PublishFacts;
const asked: string[] = [];
// Stands in for variants-units' GetPublishFacts (its own tests and the e2e tests run the real one).
const client = {
  getPublishFacts: (req: { passportId: string }) => {
    asked.push(req.passportId);
    return Promise.resolve(facts);
  },
} as unknown as VariantsUnitsClient;

beforeAll(async () => {
  h = await startHarness("passport_publish_review", {
    prePublishChecks: defaultPrePublishChecks(undefined, variantsUnitsPrePublishCheck(client)),
  });
});
afterAll(() => h?.close());

it("approving a connector's publish checks the fingerprint it recorded against the current rows", async () => {
  const t = testTenant();
  const p = await h.create(t, { category: "textile", data: publishableTextile() });
  facts = {
    variantFingerprint: REVIEWED,
    agentWrittenCount: 2,
    unitCount: 0,
    reviewUrl: "https://r.example",
  };

  // Without the fingerprint the connector is refused before any approval is recorded.
  const connector = { ...context(t), credentialKind: "connector" as const, keyId: "key_c" };
  const required = await refusal(h.client.publishPassport({ id: p.id }, { context: connector }));
  expect([required.code, required.details.agent_written_count]).toEqual(["variant_review_required", 2]);

  // With the reviewed fingerprint an approval is recorded.
  const asks = await h.client.publishPassport(
    { id: p.id, variantReviewFingerprint: REVIEWED },
    { context: connector },
  );
  if (asks.outcome.case !== "approvalRequired")
    throw new Error(`expected an approval, got ${asks.outcome.case}`);
  const approvalId = asks.outcome.value.approvalId;

  // The rows change before a person decides: approving is refused and nothing is published.
  facts = { ...facts, variantFingerprint: "cd".repeat(32) };
  const person = { ...context(t), credentialKind: "person" as const };
  const changed = await refusal(
    h.client.decidePublishApproval({ id: approvalId, approve: true, decidedBy: "Ann" }, { context: person }),
  );
  expect(changed.code).toBe("variant_review_changed");
  const still = await h.client.getPassport({ id: p.id }, { context: context(t) });
  expect(still.passport!.status).toBe(passportV1.PassportStatus.DRAFT);

  // The rows as reviewed: the approval publishes.
  facts = { ...facts, variantFingerprint: REVIEWED };
  const approved = await h.client.decidePublishApproval(
    { id: approvalId, approve: true, decidedBy: "Ann" },
    { context: person },
  );
  expect(approved.passport!.status).toBe(passportV1.PassportStatus.PUBLISHED);
  expect(asked.every((id) => id === p.id)).toBe(true);
});

it("refuses to publish a passport with more units than the plan allows", async () => {
  const t = testTenant();
  const p = await h.create(t, { category: "textile", data: publishableTextile() });
  facts = {
    variantFingerprint: REVIEWED,
    agentWrittenCount: 0,
    unitCount: 3,
    reviewUrl: "https://r.example",
  };
  const plan = { planId: "trial", subscriptionStatus: "trialing", unitLimit: 2 };
  const err = await refusal(h.client.publishPassport({ id: p.id }, { context: { ...context(t), plan } }));
  expect([err.code, err.details]).toEqual([
    "unit_limit_reached",
    { passport_id: p.id, limit: 2, current: 3 },
  ]);
  const ok = await h.client.publishPassport(
    { id: p.id },
    { context: { ...context(t), plan: { ...plan, unitLimit: 3 } } },
  );
  expect(ok.outcome.case).toBe("published");
});
