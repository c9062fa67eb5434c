import { checkLabel } from "./import";

describe("checkLabel", () => {
  it("keeps a label, trimmed", () => {
    expect(checkLabel("  first  ", 10)).toBe("first");
  });

  it("refuses an empty or too long label, naming /label", () => {
    expect(() => checkLabel(" ", 10)).toThrow(expect.objectContaining({ code: "validation_failed" }));
    expect(() => checkLabel("x".repeat(11), 10)).toThrow(
      expect.objectContaining({ details: { issues: [expect.objectContaining({ rule: "max_length" })] } }),
    );
  });
});
