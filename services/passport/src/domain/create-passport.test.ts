import { ApiError } from "@dpp/contract";
import { parseNewPassport } from "./create-passport";

const issues = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    return (e.details.issues as { source: { pointer: string }; rule: string }[]).map((i) => [
      i.source.pointer,
      i.rule,
    ]);
  }
  throw new Error("expected a refusal");
};

describe("parseNewPassport", () => {
  const emoji = (n: number) => "\u{1F642}".repeat(n);

  it("counts external_id in Unicode code points: 255 emoji are accepted", () => {
    expect(parseNewPassport({ category: "textile", externalId: emoji(255) }).externalId).toBe(emoji(255));
    expect(
      parseNewPassport({ category: "general", externalId: `${"x".repeat(254)}\u{1F642}` }).externalId,
    ).toBe(`${"x".repeat(254)}\u{1F642}`);
  });

  it("refuses an external_id of 0 or more than 255 code points", () => {
    for (const externalId of ["", emoji(256), `${"x".repeat(255)}\u{1F642}`])
      expect(issues(() => parseNewPassport({ category: "textile", externalId }))).toEqual([
        ["/external_id", "length"],
      ]);
  });
});
