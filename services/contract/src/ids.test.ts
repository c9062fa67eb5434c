import { isoTime, newId, randomHex } from "./ids";

describe("newId", () => {
  it("is <prefix>_ followed by 26 lowercase Crockford base32 characters", () => {
    const id = newId("pp");
    expect(id).toMatch(/^pp_[0-9a-hjkmnp-tv-z]{26}$/);
    expect(newId("evt")).toMatch(/^evt_/);
  });

  it("sorts lexically in creation-time order across milliseconds", () => {
    const base = Date.UTC(2026, 0, 1);
    const times = [
      0,
      1,
      2,
      31,
      32,
      33,
      1023,
      1024,
      60_000,
      86_400_000,
      31 * 86_400_000,
      10 * 365 * 86_400_000,
    ].map((d) => base + d);
    const ids = times.map((t) => newId("x", t));
    expect([...ids].sort()).toEqual(ids);
    // reversed creation order still sorts back into time order
    const shuffled = [...ids].reverse();
    expect(shuffled.sort()).toEqual(ids);
    // and ids from real clock readings taken milliseconds apart keep their order
    expect(newId("x", 1) < newId("x", 2)).toBe(true);
    expect(newId("x", Date.now() - 1) < newId("x")).toBe(true);
  });

  it("sorts in creation order within one millisecond and while the clock steps back a little", () => {
    const now = Date.now() + 5_000;
    const ids = [newId("x", now), newId("x", now), newId("x", now - 3), newId("x", now), newId("x", now + 1)];
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    // the ids of one millisecond carry that millisecond
    expect(ids[3]!.slice(2, 12)).toBe(ids[0]!.slice(2, 12));
  });

  it("is unique over many ids, even within one millisecond", () => {
    const now = Date.now();
    const ids = new Set<string>();
    for (let i = 0; i < 20_000; i++) ids.add(newId("u", now));
    expect(ids.size).toBe(20_000);
  });
});

describe("isoTime", () => {
  it("is RFC 3339 UTC with millisecond precision for dates, strings and epoch numbers", () => {
    const form = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
    expect(isoTime(new Date(Date.UTC(2026, 1, 3, 4, 5, 6, 7)))).toBe("2026-02-03T04:05:06.007Z");
    expect(isoTime("2026-02-03T05:05:06+01:00")).toBe("2026-02-03T04:05:06.000Z");
    expect(isoTime(0)).toBe("1970-01-01T00:00:00.000Z");
    expect(isoTime(Date.now())).toMatch(form);
  });
});

describe("randomHex", () => {
  it("is n random bytes as lowercase hex, never the same twice over many draws (the pool is drawn again)", () => {
    expect(randomHex(12)).toMatch(/^[0-9a-f]{24}$/);
    const seen = new Set<string>();
    // 2,000 draws of 12 bytes: several pools of 4 KiB
    for (let i = 0; i < 2_000; i++) seen.add(randomHex(12));
    expect(seen.size).toBe(2_000);
  });

  it("spreads the characters of newId's random part over the whole alphabet", () => {
    const counts = new Map<string, number>();
    // one id per millisecond: each draws its random part afresh (ids of one millisecond count up from the first)
    const start = Date.now() + 60_000;
    for (let i = 0; i < 4_000; i++)
      for (const c of newId("x", start + i).slice(12)) counts.set(c, (counts.get(c) ?? 0) + 1);
    // 64,000 characters over 32: about 2,000 each
    expect(counts.size).toBe(32);
    for (const n of counts.values()) expect(n).toBeGreaterThan(1_600);
  });
});
