/**
 * A domain event is in the outbox exactly when its state change committed: the outbox row is written in the
 * change's own transaction, so a transaction that rolls back, even after the event was written, leaves no row.
 *
 * The failure is forced in the database: a deferred constraint trigger on `passport` raises at COMMIT for the
 * passports (by id or external_id) listed in `fail_commit`, after every statement of the transaction (the
 * versioned update and the outbox insert included) has run.
 */
import { sql } from "kysely";
import type { RequestContext } from "@dpp/kit";
import {
  context,
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
  h = await startHarness("passport_outbox_atomicity");
  await sql`create table passport.fail_commit (key text primary key)`.execute(h.sql);
  await sql`create function passport.fail_at_commit() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from passport.fail_commit f where f.key in (new.id, new.external_id)) then
        raise exception 'forced failure at commit of %', new.id;
      end if;
      return null;
    end $$`.execute(h.sql);
  await sql`create constraint trigger passport_fail_at_commit after insert or update on passport.passport
    deferrable initially deferred for each row execute function passport.fail_at_commit()`.execute(h.sql);
});
afterAll(() => h?.close());

const failCommitsOf = (key: string) =>
  sql`insert into passport.fail_commit (key) values (${key})`.execute(h.sql);
const letCommitsOf = (key: string) => sql`delete from passport.fail_commit where key = ${key}`.execute(h.sql);

const PRO = { planId: "pro", subscriptionStatus: "active", publishLimit: 1000 };
const ctx = (t: Tenant, extra: Partial<RequestContext> = {}): RequestContext => ({
  ...context(t),
  credentialKind: "secret",
  plan: PRO,
  ...extra,
});

const complete = () => publishableTextile();

/** The outbox rows of one passport: [type, version], oldest first. */
async function eventsOf(id: string): Promise<[string, number][]> {
  const { rows } = await sql<{ type: string; version: number }>`
    select type, (payload->'related'->>'version')::int as version from outbox
    where payload->'related'->>'id' = ${id} order by id`.execute(h.sql);
  return rows.map((r) => [r.type, r.version]);
}

async function stored(t: Tenant, id: string) {
  const p = (await h.client.getPassport({ id }, { context: ctx(t) })).passport!;
  return { version: p.version, status: statusName(p.status), dataJson: p.dataJson, externalId: p.externalId };
}

/** The writes by id, each from a status that allows it, with the event it records and the status it leaves. */
const writes: {
  name: string;
  from: "draft" | "published" | "deactivated" | "trashed" | "readonly";
  event: string;
  to: string;
  call: (t: Tenant, id: string) => Promise<unknown>;
}[] = [
  {
    name: "PATCH",
    from: "draft",
    event: "passport.updated",
    to: "draft",
    call: (t, id) =>
      h.client.updatePassport(
        { id, patchJson: JSON.stringify({ data: { product_name: "Renamed" } }) },
        { context: ctx(t) },
      ),
  },
  {
    name: "publish",
    from: "draft",
    event: "passport.published",
    to: "published",
    call: (t, id) => h.client.publishPassport({ id }, { context: ctx(t) }),
  },
  {
    name: "unpublish",
    from: "published",
    event: "passport.unpublished",
    to: "draft",
    call: (t, id) => h.client.unpublishPassport({ id }, { context: ctx(t) }),
  },
  {
    name: "trash",
    from: "draft",
    event: "passport.trashed",
    to: "trashed",
    call: (t, id) => h.client.trashPassport({ id }, { context: ctx(t) }),
  },
  {
    name: "restore",
    from: "trashed",
    event: "passport.restored",
    to: "draft",
    call: (t, id) => h.client.restorePassport({ id }, { context: ctx(t) }),
  },
  {
    name: "deactivate",
    from: "published",
    event: "passport.deactivated",
    to: "deactivated",
    call: (t, id) => h.client.deactivatePassport({ id }, { context: ctx(t) }),
  },
  {
    name: "reactivate",
    from: "deactivated",
    event: "passport.reactivated",
    to: "published",
    call: (t, id) => h.client.reactivatePassport({ id }, { context: ctx(t) }),
  },
  {
    name: "lock",
    from: "published",
    event: "passport.locked",
    to: "readonly",
    call: (t, id) => h.client.lockPassport({ id }, { context: ctx(t) }),
  },
  {
    name: "unlock",
    from: "readonly",
    event: "passport.unlocked",
    to: "published",
    call: (t, id) => h.client.unlockPassport({ id }, { context: ctx(t) }),
  },
];

async function passportIn(t: Tenant, status: (typeof writes)[number]["from"]) {
  const p = await h.create(t, { category: "textile", data: complete() });
  const c = { context: ctx(t) };
  if (status === "trashed") await h.client.trashPassport({ id: p.id }, c);
  if (status !== "draft" && status !== "trashed") await h.client.publishPassport({ id: p.id }, c);
  if (status === "deactivated") await h.client.deactivatePassport({ id: p.id }, c);
  if (status === "readonly") await h.client.lockPassport({ id: p.id }, c);
  return p.id;
}

describe.each(writes)("$name", ({ from, event, to, call }) => {
  it("whose transaction fails at commit leaves no outbox row; once it commits, exactly one", async () => {
    const t = testTenant();
    const id = await passportIn(t, from);
    const before = await stored(t, id);
    const eventsBefore = await eventsOf(id);

    await failCommitsOf(id);
    const err = await refusal(call(t, id));
    expect(err.code).toBe("internal_error");
    expect(await stored(t, id)).toEqual(before);
    expect(await eventsOf(id)).toEqual(eventsBefore);

    await letCommitsOf(id);
    await call(t, id);
    expect(await stored(t, id)).toMatchObject({ status: to, version: before.version + 1 });
    expect(await eventsOf(id)).toEqual([...eventsBefore, [event, before.version + 1]]);
  });
});

describe("create", () => {
  it("whose transaction fails at commit leaves no passport and no outbox row", async () => {
    const t = testTenant();
    const externalId = `FAIL-${randomGtin13()}`;
    await failCommitsOf(externalId);
    const err = await refusal(h.create(t, { category: "textile", external_id: externalId }));
    expect(err.code).toBe("internal_error");
    expect((await h.list(t)).passports).toEqual([]);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from outbox
      where organization_id = ${t.organizationId}`.execute(h.sql);
    expect(rows[0]!.n).toBe(0);
    await letCommitsOf(externalId);
    const p = await h.create(t, { category: "textile", external_id: externalId });
    expect(await eventsOf(p.id)).toEqual([["passport.created", 1]]);
  });
});

describe("a refusal inside the write's transaction rolls back what it wrote before", () => {
  it("PATCH moving the GTIN to one held by another passport: the old claim stays, no version, no event", async () => {
    const t = testTenant();
    const taken = await h.create(t, { category: "textile", data: complete() });
    const p = await h.create(t, { category: "textile", data: complete() });
    const before = await stored(t, p.id);
    // The update releases the passport's own claim, then meets the other passport's: gtin_in_use.
    const err = await refusal(
      h.client.updatePassport(
        { id: p.id, patchJson: JSON.stringify({ data: { gtin: taken.gtin } }) },
        { context: ctx(t) },
      ),
    );
    expect(err.code).toBe("gtin_in_use");
    expect(await stored(t, p.id)).toEqual(before);
    const { rows } = await sql<{ gtin: string }>`select gtin from gtin_claim
      where organization_id = ${t.organizationId} and livemode = false and passport_id = ${p.id}`.execute(
      h.sql,
    );
    expect(rows.map((r) => r.gtin)).toEqual([p.gtin]);
    expect(await eventsOf(p.id)).toEqual([["passport.created", 1]]);
  });

  it("a connector's publish records its approval and no event; the passport is unchanged", async () => {
    const t = testTenant();
    const p = await h.create(t, { category: "textile", data: complete() });
    const res = await h.client.publishPassport(
      { id: p.id },
      { context: ctx(t, { credentialKind: "connector", keyId: "key_c" }) },
    );
    expect(res.outcome.case).toBe("approvalRequired");
    expect(await stored(t, p.id)).toMatchObject({ status: "draft", version: 1 });
    expect(await eventsOf(p.id)).toEqual([["passport.created", 1]]);
  });

  it("stale Expected-Version and wrong status write no event", async () => {
    const t = testTenant();
    const p = await h.create(t, { category: "textile", data: complete() });
    const stale = await refusal(
      h.client.trashPassport({ id: p.id, expectedVersion: 9 }, { context: ctx(t) }),
    );
    expect(stale.code).toBe("precondition_failed");
    const wrong = await refusal(h.client.unpublishPassport({ id: p.id }, { context: ctx(t) }));
    expect(wrong.code).toBe("wrong_status");
    expect(await eventsOf(p.id)).toEqual([["passport.created", 1]]);
  });
});
