/** ListPassports on its own: order, keyset paging, filters, cursors bound to their filters, bad parameters. */
import { sql } from "kysely";
import { passportV1 } from "@dpp/proto";
import {
  at,
  refusal,
  startHarness,
  testTenant,
  type Harness,
  type ListRequest,
  type Tenant,
} from "../harness";

const Status = passportV1.PassportStatus;

let h: Harness;
const t: Tenant = testTenant();
/** Ids in creation order. */
const created: { id: string; category: string }[] = [];

beforeAll(async () => {
  h = await startHarness("passport_list");
  const categories = ["textile", "battery", "general"];
  for (let i = 0; i < 12; i++) {
    const category = categories[i % 3]!;
    const p = await h.create(t, { category, external_id: `L-${i}` });
    created.push({ id: p.id, category });
    // Ids sort by creation time at millisecond resolution; keep them apart.
    await new Promise((r) => setTimeout(r, 2));
  }
});
afterAll(() => h?.close());

const newestFirst = () => [...created].reverse().map((p) => p.id);

async function pageThrough(req: ListRequest) {
  const ids: string[] = [];
  let cursor = "";
  for (let pages = 0; pages < 50; pages++) {
    const res = await h.list(t, { ...req, cursor });
    ids.push(...res.passports.map((p) => p.id));
    if (!res.hasMore) {
      expect(res.nextCursor).toBe("");
      return { ids, pages: pages + 1 };
    }
    expect(res.nextCursor).not.toBe("");
    cursor = res.nextCursor;
  }
  throw new Error("paging did not end");
}

describe("listPassports", () => {
  it("lists newest first, with the default limit", async () => {
    const res = await h.list(t);
    expect(res.passports.map((p) => p.id)).toEqual(newestFirst());
    expect(res.hasMore).toBe(false);
    expect(res.nextCursor).toBe("");
  });

  it("pages to the end with limit and cursor, without duplicates or gaps", async () => {
    const { ids, pages } = await pageThrough({ limit: 5 });
    expect(pages).toBe(3);
    expect(ids).toEqual(newestFirst());
    expect(new Set(ids).size).toBe(ids.length);

    // A limit that divides the total exactly: the last full page says has_more only if more remain.
    const exact = await pageThrough({ limit: 4 });
    expect(exact.ids).toEqual(newestFirst());
    expect(exact.pages).toBe(3);
  });

  it("keeps a cursor's place when a passport is created between two pages", async () => {
    const first = await h.list(t, { limit: 3 });
    const extra = await h.create(t, { category: "textile" });
    const rest = await pageThrough({ limit: 100 });
    // The list from scratch now starts with the new passport.
    expect(rest.ids[0]).toBe(extra.id);
    const second = await h.list(t, { limit: 100, cursor: first.nextCursor });
    expect(second.passports.map((p) => p.id)).toEqual(newestFirst().slice(3));
    await sql`delete from passport where id = ${extra.id}`.execute(h.sql);
  });

  it("filters by category", async () => {
    const { ids } = await pageThrough({ limit: 2, category: "battery" });
    expect(ids).toEqual(
      [...created]
        .reverse()
        .filter((p) => p.category === "battery")
        .map((p) => p.id),
    );
  });

  it("filters by status", async () => {
    const published = [created[1]!.id, created[7]!.id];
    await sql`update passport set status = 'published' where id in (${sql.join(published)})`.execute(h.sql);
    try {
      const res = await h.list(t, { status: Status.PUBLISHED });
      expect(res.passports.map((p) => p.id)).toEqual([...published].reverse());
      expect(res.passports.every((p) => p.status === Status.PUBLISHED)).toBe(true);
      const drafts = await pageThrough({ limit: 3, status: Status.DRAFT });
      expect(drafts.ids).toEqual(newestFirst().filter((id) => !published.includes(id)));
      expect((await h.list(t, { status: Status.TRASHED })).passports).toEqual([]);
    } finally {
      await sql`update passport set status = 'draft' where id in (${sql.join(published)})`.execute(h.sql);
    }
  });

  it("filters by updated_since, inclusive", async () => {
    const old = created.slice(0, 4).map((p) => p.id);
    await sql`update passport set updated_at = '2024-01-01T00:00:00Z' where id in (${sql.join(old)})`.execute(
      h.sql,
    );
    const boundary = created[4]!.id;
    await sql`update passport set updated_at = '2025-06-01T12:00:00Z' where id = ${boundary}`.execute(h.sql);
    const { ids } = await pageThrough({ limit: 3, updatedSince: at("2025-06-01T12:00:00Z") });
    expect(ids).toEqual(newestFirst().filter((id) => !old.includes(id)));
    expect(ids).toContain(boundary);
    // An offset form of the same instant is the same filter value.
    const offset = await h.list(t, { limit: 100, updatedSince: at("2025-06-01T14:00:00+02:00") });
    expect(offset.passports.map((p) => p.id)).toEqual(ids);
    expect((await h.list(t, { updatedSince: at("2999-01-01T00:00:00Z") })).passports).toEqual([]);
  });

  it("combines filters", async () => {
    const res = await h.list(t, {
      category: "textile",
      updatedSince: at("2025-01-01T00:00:00Z"),
      limit: 100,
    });
    const expected = [...created]
      .slice(4)
      .reverse()
      .filter((p) => p.category === "textile")
      .map((p) => p.id);
    expect(res.passports.map((p) => p.id)).toEqual(expected);
  });
});

describe("cursors", () => {
  it("refuses a cursor sent with other filters than the ones it was issued for", async () => {
    const page = await h.list(t, { limit: 2, category: "textile" });
    expect(page.hasMore).toBe(true);
    for (const other of [
      { category: "battery" },
      { category: "" },
      { category: "textile", status: Status.DRAFT },
    ]) {
      const err = await refusal(h.list(t, { limit: 2, cursor: page.nextCursor, ...other }));
      expect(err.code).toBe("cursor_invalid");
      expect(err.details.issues).toEqual([{ source: { parameter: "cursor" }, rule: "cursor_filters" }]);
    }
    // The same filters with another limit are fine: the limit is not a filter.
    const next = await h.list(t, { limit: 50, cursor: page.nextCursor, category: "textile" });
    expect(next.passports.length).toBeGreaterThan(0);
  });

  it("refuses a malformed cursor", async () => {
    for (const cursor of [
      "not a cursor!",
      "abc",
      Buffer.from('{"l":"events","f":"x","p":1}').toString("base64url"),
    ]) {
      const err = await refusal(h.list(t, { cursor }));
      expect(err.code).toBe("cursor_invalid");
      expect(err.status).toBe(400);
    }
  });
});

describe("bad parameters", () => {
  // The syntax of limit, status and updated_since is the gateway's to check (its own tests); the category
  // needs the categories.
  it("refuses an unknown category as invalid_request naming the parameter", async () => {
    const err = await refusal(h.list(t, { category: "spaceship" }));
    expect(err.code).toBe("invalid_request");
    expect(err.status).toBe(400);
    expect(err.details.issues).toEqual([
      {
        source: { parameter: "category" },
        rule: "unknown_category",
        message: "spaceship is not a category.",
      },
    ]);
  });

  it("accepts the limits at the edges", async () => {
    expect((await h.list(t, { limit: 1 })).passports).toHaveLength(1);
    expect((await h.list(t, { limit: 100 })).passports).toHaveLength(created.length);
  });
});

describe("validate_only", () => {
  it("checks the category and the cursor, and lists nothing", async () => {
    const refused = await refusal(h.list(t, { category: "spaceship", validateOnly: true }));
    expect(refused.details.issues).toEqual([
      {
        source: { parameter: "category" },
        rule: "unknown_category",
        message: "spaceship is not a category.",
      },
    ]);
    const badCursor = await refusal(h.list(t, { cursor: "abc", validateOnly: true }));
    expect(badCursor.code).toBe("cursor_invalid");
    const ok = await h.list(t, { category: "textile", validateOnly: true });
    expect(ok).toMatchObject({ passports: [], hasMore: false, nextCursor: "" });
  });
});
