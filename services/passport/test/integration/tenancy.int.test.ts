/**
 * Tenancy of every call by id: a passport of another organization (in the same mode) or of the other mode of
 * the same organization is invisible. Each write answers resource_not_found, exactly as for an id that does not
 * exist (never precondition_failed or a status refusal, never the passport's current_version), and changes
 * nothing: no version, no event, no validation record, no GTIN claim.
 */
import { sql } from "kysely";
import type { RequestContext } from "@dpp/kit";
import {
  context,
  liveTenant,
  randomGtin13,
  refusal,
  startHarness,
  statusName,
  testTenant,
  type Harness,
  type Tenant,
  publishableTextile,
} from "../harness";

let h: Harness;
beforeAll(async () => {
  h = await startHarness("passport_tenancy");
});
afterAll(() => h?.close());

const PRO = { planId: "pro", subscriptionStatus: "active", publishLimit: 1000 };
const ctx = (t: Tenant): RequestContext => ({ ...context(t), credentialKind: "secret", plan: PRO });

const complete = () => publishableTextile();

type Status = "draft" | "published" | "deactivated" | "trashed" | "readonly";

/** A complete passport of `owner`, brought to `status` by the owner itself. */
async function ownedPassport(owner: Tenant, status: Status) {
  const p = await h.create(owner, { category: "textile", data: complete() });
  const c = { context: ctx(owner) };
  if (status === "trashed") await h.client.trashPassport({ id: p.id }, c);
  if (status === "published" || status === "deactivated" || status === "readonly")
    await h.client.publishPassport({ id: p.id }, c);
  if (status === "deactivated") await h.client.deactivatePassport({ id: p.id }, c);
  if (status === "readonly") await h.client.lockPassport({ id: p.id }, c);
  return (await h.client.getPassport({ id: p.id }, c)).passport!;
}

async function footprint(owner: Tenant, id: string) {
  const count = async (table: "outbox" | "validation" | "gtin_claim" | "publish_approval") => {
    const idColumn = table === "outbox" ? sql`payload->'related'->>'id'` : sql.ref("passport_id");
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}
      where ${idColumn} = ${id}`.execute(h.sql);
    return rows[0]!.n;
  };
  const p = (await h.client.getPassport({ id }, { context: ctx(owner) })).passport!;
  return {
    version: p.version,
    status: p.status,
    dataJson: p.dataJson,
    outbox: await count("outbox"),
    validation: await count("validation"),
    gtin_claim: await count("gtin_claim"),
    publish_approval: await count("publish_approval"),
  };
}

/** Each call by id, with the status in which the owner itself could make it. */
const calls: {
  name: string;
  status: Status;
  call: (id: string, c: RequestContext, version: number) => Promise<unknown>;
}[] = [
  {
    name: "PATCH",
    status: "draft",
    call: (id, c) =>
      h.client.updatePassport(
        { id, patchJson: JSON.stringify({ data: { product_name: "Taken" } }) },
        { context: c },
      ),
  },
  {
    name: "PATCH with the passport's Expected-Version",
    status: "published",
    call: (id, c, version) =>
      h.client.updatePassport(
        {
          id,
          patchJson: JSON.stringify({ external_id: "TAKEN" }),
          expectedVersion: version,
        },
        { context: c },
      ),
  },
  {
    name: "publish",
    status: "draft",
    call: (id, c) => h.client.publishPassport({ id }, { context: c }),
  },
  {
    name: "publish with the passport's Expected-Version",
    status: "draft",
    call: (id, c, version) => h.client.publishPassport({ id, expectedVersion: version }, { context: c }),
  },
  {
    name: "unpublish",
    status: "published",
    call: (id, c) => h.client.unpublishPassport({ id }, { context: c }),
  },
  {
    name: "trash",
    status: "draft",
    call: (id, c) => h.client.trashPassport({ id }, { context: c }),
  },
  {
    name: "restore",
    status: "trashed",
    call: (id, c) => h.client.restorePassport({ id }, { context: c }),
  },
  {
    name: "restore with the passport's Expected-Version",
    status: "trashed",
    call: (id, c, version) => h.client.restorePassport({ id, expectedVersion: version }, { context: c }),
  },
  {
    name: "deactivate",
    status: "published",
    call: (id, c) => h.client.deactivatePassport({ id }, { context: c }),
  },
  {
    name: "reactivate",
    status: "deactivated",
    call: (id, c) => h.client.reactivatePassport({ id }, { context: c }),
  },
  { name: "lock", status: "published", call: (id, c) => h.client.lockPassport({ id }, { context: c }) },
  { name: "unlock", status: "readonly", call: (id, c) => h.client.unlockPassport({ id }, { context: c }) },
  {
    name: "validate",
    status: "draft",
    call: (id, c) => h.client.validatePassport({ id }, { context: c }),
  },
  {
    name: "claim a variant GTIN for it",
    status: "draft",
    call: (id, c) =>
      h.client.claimGtins(
        { claims: [{ gtin: randomGtin13(), passportId: id, ownerId: "var_1" }] },
        { context: c },
      ),
  },
  { name: "get", status: "draft", call: (id, c) => h.client.getPassport({ id }, { context: c }) },
  { name: "links", status: "draft", call: (id, c) => h.client.getPassportLinks({ id }, { context: c }) },
];

const strangers: { name: string; owner: () => Tenant; caller: (owner: Tenant) => Tenant }[] = [
  { name: "another organization in the same mode (test)", owner: testTenant, caller: () => testTenant() },
  { name: "another organization in the same mode (live)", owner: liveTenant, caller: () => liveTenant() },
  {
    name: "the same organization in the other mode",
    owner: testTenant,
    caller: (o) => liveTenant(o.organizationId),
  },
];

describe.each(strangers)("a call by id from $name", ({ owner: newOwner, caller }) => {
  it.each(calls)("$name answers resource_not_found and changes nothing", async ({ status, call }) => {
    const owner = newOwner();
    const p = await ownedPassport(owner, status);
    expect(statusName(p.status)).toBe(status);
    const before = await footprint(owner, p.id);
    const err = await refusal(call(p.id, ctx(caller(owner)), p.version));
    expect({ code: err.code, status: err.status, message: err.message, details: err.details }).toEqual({
      code: "resource_not_found",
      status: 404,
      message: `No passport ${p.id}.`,
      details: { passport_id: p.id },
    });
    expect(await footprint(owner, p.id)).toEqual(before);
  });
});

it("the owner can make each of these calls (so the refusals above are the tenancy's doing)", async () => {
  const owner = testTenant();
  for (const { status, call } of calls) {
    const p = await ownedPassport(owner, status);
    await expect(call(p.id, ctx(owner), p.version)).resolves.toBeDefined();
  }
});
