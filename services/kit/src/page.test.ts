import { DEFAULT_LIMIT, MAX_LIMIT, decodeCursor, page, pageLimit } from "./pagination";

describe("pageLimit", () => {
  it("gives the default for 0, the number asked for up to MAX_LIMIT, and MAX_LIMIT above it", () => {
    expect(pageLimit(0)).toBe(DEFAULT_LIMIT);
    expect(pageLimit(1)).toBe(1);
    expect(pageLimit(MAX_LIMIT)).toBe(MAX_LIMIT);
    expect(pageLimit(MAX_LIMIT + 1)).toBe(MAX_LIMIT);
  });
});

describe("page", () => {
  const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `r${i}` }));
  const next = { list: "things", filters: { status: "draft" }, position: (r: { id: string }) => r.id };

  it("answers the rows of a last page without a cursor", () => {
    expect(page(rows(2), 3, next)).toEqual({ rows: rows(2), hasMore: false, nextCursor: "" });
    expect(page([], 3, next)).toEqual({ rows: [], hasMore: false, nextCursor: "" });
  });

  it("keeps `limit` rows of limit + 1 and positions the next cursor at the last one kept", () => {
    const p = page(rows(4), 3, next);
    expect(p.rows).toEqual(rows(3));
    expect(p.hasMore).toBe(true);
    expect(decodeCursor<string>("things", { status: "draft" }, p.nextCursor)).toBe("r2");
  });

  it("gives no cursor without `next`", () => {
    expect(page(rows(4), 3)).toEqual({ rows: rows(3), hasMore: true, nextCursor: "" });
  });
});
