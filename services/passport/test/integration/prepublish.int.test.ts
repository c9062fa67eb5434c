/** The pre-publish seam: a check owned by another service that refuses blocks publishing with its code. */
import { ApiError } from "@dpp/contract";
import { sql } from "kysely";
import { passportV1 } from "@dpp/proto";
import { CompositePrePublishCheck, nothingToCheck, type PrePublishCheck } from "../../src/domain/prepublish";
import { context, refusal, startHarness, testTenant, type Harness, publishableTextile } from "../harness";

let h: Harness;
const asked: { passportId: string; fingerprint?: string }[] = [];
const units: PrePublishCheck = {
  name: "units",
  check: (_t, p, input) => {
    asked.push({ passportId: p.id, fingerprint: input.variantReviewFingerprint });
    return Promise.resolve(
      p.data.product_name === "Too many units"
        ? new ApiError("unit_limit_reached", "The passport carries more units than the plan allows.", {
            limit: 100,
            current: 101,
          })
        : undefined,
    );
  },
};

beforeAll(async () => {
  h = await startHarness("passport_prepublish", {
    prePublishChecks: new CompositePrePublishCheck([nothingToCheck("documents"), units]),
  });
});
afterAll(() => h?.close());

const complete = (name: string) => publishableTextile({ productName: name });

it("a refusing check blocks publish with its code and nothing is published or emitted", async () => {
  const t = testTenant();
  const p = await h.create(t, { category: "textile", data: complete("Too many units") });
  const fingerprint = "ab".repeat(32);
  const err = await refusal(
    h.client.publishPassport({ id: p.id, variantReviewFingerprint: fingerprint }, { context: context(t) }),
  );
  expect(err.code).toBe("unit_limit_reached");
  expect(err.details).toEqual({ limit: 100, current: 101 });
  expect(asked).toContainEqual({ passportId: p.id, fingerprint });
  const got = await h.client.getPassport({ id: p.id }, { context: context(t) });
  expect(got.passport).toMatchObject({ status: passportV1.PassportStatus.DRAFT, version: 1 });
  const { rows } = await sql<{
    type: string;
  }>`select type from outbox where organization_id = ${t.organizationId}`.execute(h.sql);
  expect(rows.map((r) => r.type)).toEqual(["passport.created"]);
  const v = await h.client.validatePassport({ id: p.id, dryRun: true }, { context: context(t) });
  expect(v.validation).toMatchObject({ publishable: false });
  expect(v.validation!.issues).toEqual([
    expect.objectContaining({ rule: "unit_limit_reached", severity: passportV1.ValidationSeverity.ERROR }),
  ]);
});

it("a check that passes lets publish through", async () => {
  const t = testTenant();
  const p = await h.create(t, { category: "textile", data: complete("Fine") });
  const res = await h.client.publishPassport({ id: p.id }, { context: context(t) });
  expect(res.outcome.case).toBe("published");
  expect(res.outcome.value).toMatchObject({ passport: { status: passportV1.PassportStatus.PUBLISHED } });
});
