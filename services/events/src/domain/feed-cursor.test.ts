import { encodeCursor } from "@dpp/kit";
import { feedCursor, readFeedCursor } from "./feed-cursor";

describe("feed cursor", () => {
  it("round-trips the position for the same filters", () => {
    expect(readFeedCursor({ types: [] }, feedCursor({ types: [] }, 42))).toBe(42);
    const f = { types: ["passport.created", "passport.published"] };
    expect(readFeedCursor(f, feedCursor(f, 0))).toBe(0);
  });

  it("reads from the start without a cursor", () => {
    expect(readFeedCursor({ types: [] }, "")).toBe(0);
    expect(readFeedCursor({ types: [] }, undefined)).toBe(0);
  });

  it("refuses a cursor issued for other types", () => {
    const c = feedCursor({ types: ["passport.created"] }, 3);
    expect(() => readFeedCursor({ types: [] }, c)).toThrow(
      expect.objectContaining({ code: "cursor_invalid" }),
    );
  });

  it("refuses another list's cursor and a bad position", () => {
    expect(() => readFeedCursor({ types: [] }, encodeCursor("passports", { types: [] }, 3))).toThrow(
      expect.objectContaining({ code: "cursor_invalid" }),
    );
    for (const p of [-1, 1.5, "3", null, { s: 1 }]) {
      expect(() => readFeedCursor({ types: [] }, encodeCursor("events", { types: [] }, p))).toThrow(
        expect.objectContaining({ code: "cursor_invalid" }),
      );
    }
  });
});
