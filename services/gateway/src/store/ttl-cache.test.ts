import { MAX_CACHE_TTL_MS, TtlCache } from "./ttl-cache";

let clock = 1_000_000;
const now = () => clock;
const found = (v: string) => async () => v;
const missing = async () => undefined;

describe("TtlCache", () => {
  it("serves a loaded value until its TTL has passed, then loads again", async () => {
    const cache = new TtlCache<string>(5000, 10, now);
    expect(await cache.getOrLoad("a", found("one"))).toBe("one");
    clock += 4999;
    expect(await cache.getOrLoad("a", found("two"))).toBe("one");
    clock += 1;
    expect(await cache.getOrLoad("a", found("two"))).toBe("two");
  });

  it("never caches a value that was not found, so a row created later is read at once", async () => {
    const cache = new TtlCache<string>(5000, 10, now);
    expect(await cache.getOrLoad("a", missing)).toBeUndefined();
    expect(cache.size).toBe(0);
    expect(await cache.getOrLoad("a", found("created"))).toBe("created");
  });

  it("keeps at most maxEntries, dropping the oldest first", async () => {
    const cache = new TtlCache<string>(5000, 3, now);
    for (const k of ["a", "b", "c", "d", "e"]) await cache.getOrLoad(k, found(k));
    expect(cache.size).toBe(3);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.get("b")).toBeUndefined();
    expect(["c", "d", "e"].map((k) => cache.get(k))).toEqual(["c", "d", "e"]);
  });

  it("evicts by key, by predicate and all at once", async () => {
    const cache = new TtlCache<{ org: string }>(5000, 10, now);
    for (const [k, org] of [
      ["k1", "x"],
      ["k2", "x"],
      ["k3", "y"],
    ] as const)
      await cache.getOrLoad(k, async () => ({ org }));
    cache.delete("k3");
    expect(cache.get("k3")).toBeUndefined();
    cache.deleteWhere((v) => v.org === "x");
    expect(cache.size).toBe(0);
    await cache.getOrLoad("k1", async () => ({ org: "x" }));
    cache.clear();
    expect(cache.get("k1")).toBeUndefined();
  });

  it("does not cache a value read while an eviction happened (the read may predate the change)", async () => {
    const cache = new TtlCache<string>(5000, 10, now);
    let finish!: (v: string) => void;
    const inFlight = cache.getOrLoad("a", () => new Promise<string>((r) => (finish = r)));
    cache.delete("a"); // the change notification arrives while the store is being read
    finish("before the change");
    expect(await inFlight).toBe("before the change");
    expect(cache.get("a")).toBeUndefined();
    expect(await cache.getOrLoad("a", found("after the change"))).toBe("after the change");
  });

  it("caches nothing with a TTL of 0 and refuses a TTL above the maximum", async () => {
    const off = new TtlCache<string>(0, 10, now);
    await off.getOrLoad("a", found("one"));
    expect(off.size).toBe(0);
    expect(() => new TtlCache<string>(MAX_CACHE_TTL_MS + 1, 10)).toThrow(/TTL/);
    expect(() => new TtlCache<string>(1000, 0)).toThrow(/size/);
  });
});
