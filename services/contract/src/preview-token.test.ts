import { previewExpiry, signPreviewToken, verifyPreviewToken } from "./preview-token";

const s = { passportId: "pp_1", organizationId: "org_1", livemode: false };
const now = Date.UTC(2026, 10, 28, 12, 30);

describe("preview tokens", () => {
  it("verify for the passport they were signed for, until they expire", () => {
    const exp = previewExpiry(now);
    expect(exp).toBe(Date.UTC(2026, 10, 28, 14, 0));
    const token = signPreviewToken("secret", s, exp);
    expect(verifyPreviewToken("secret", "pp_1", token, now)).toEqual({
      organizationId: "org_1",
      livemode: false,
    });
    expect(verifyPreviewToken("secret", "pp_1", token, exp)).toBeNull();
  });

  it("refuse another passport, another secret, an edited organization or mode, and junk", () => {
    const token = signPreviewToken("secret", s, previewExpiry(now));
    expect(verifyPreviewToken("secret", "pp_2", token, now)).toBeNull();
    expect(verifyPreviewToken("other", "pp_1", token, now)).toBeNull();
    expect(verifyPreviewToken("", "pp_1", token, now)).toBeNull();
    expect(verifyPreviewToken("secret", "pp_1", token.replace("org_1", "org_2"), now)).toBeNull();
    expect(verifyPreviewToken("secret", "pp_1", token.replace(".test.", ".live."), now)).toBeNull();
    expect(verifyPreviewToken("secret", "pp_1", "x", now)).toBeNull();
  });
});
