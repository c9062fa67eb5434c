import { digestOf, digestsEqual, generateKeyText, parseKeyText, scopeAllows } from "./keys";

describe("API key text", () => {
  it("generates keys with the mode prefix that parse back with their digest", () => {
    const test = generateKeyText(false);
    const live = generateKeyText(true);
    expect(test).toMatch(/^dpp_sk_test_[0-9A-Za-z]{38}$/);
    expect(live).toMatch(/^dpp_sk_live_[0-9A-Za-z]{38}$/);
    expect(parseKeyText(test)).toEqual({ livemode: false, digest: digestOf(test), last4: test.slice(-4) });
    expect(parseKeyText(live)?.livemode).toBe(true);
  });

  it("never generates the same key twice", () => {
    const seen = new Set(Array.from({ length: 2000 }, () => generateKeyText(false)));
    expect(seen.size).toBe(2000);
  });

  it("refuses a key whose checksum or format is wrong", () => {
    const key = generateKeyText(false);
    const flipped = key.slice(0, 20) + (key[20] === "a" ? "b" : "a") + key.slice(21);
    expect(parseKeyText(flipped)).toBeUndefined();
    expect(parseKeyText(key.slice(0, -1))).toBeUndefined();
    expect(parseKeyText(key.replace("_test_", "_live_"))).toBeUndefined();
    expect(parseKeyText("sk_test_abc")).toBeUndefined();
    expect(parseKeyText("")).toBeUndefined();
  });

  it("skips the checksum only for the digest vouched for as issued", () => {
    const key = generateKeyText(false);
    const flipped = key.slice(0, -1) + (key.endsWith("a") ? "b" : "a");
    const issued = (d: string) => d === digestOf(key);
    expect(parseKeyText(key, issued)).toEqual(parseKeyText(key));
    expect(parseKeyText(flipped, issued)).toBeUndefined();
    expect(parseKeyText(flipped, () => false)).toBeUndefined();
  });

  it("compares digests exactly", () => {
    const d = digestOf("x");
    expect(digestsEqual(d, digestOf("x"))).toBe(true);
    expect(digestsEqual(d, digestOf("y"))).toBe(false);
    expect(digestsEqual(d, "00")).toBe(false);
  });
});

describe("scopes", () => {
  it("lets a write scope allow the matching read scope only", () => {
    expect(scopeAllows(["passports:write"], "passports:read")).toBe(true);
    expect(scopeAllows(["passports:read"], "passports:write")).toBe(false);
    expect(scopeAllows(["documents:write"], "passports:read")).toBe(false);
    expect(scopeAllows(["events:read"], "events:read")).toBe(true);
  });
});
