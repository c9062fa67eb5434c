import { verifyPreviewToken } from "@dpp/contract";
import { encodeAiValue, gs1DigitalLink, isRestrictedCirculation, passportLinks } from "./links";

const hosts = { publicBaseUrl: "https://passports.example", resolverBaseUrl: "https://id.example" };
const base = {
  id: "pp_1",
  organization_id: "org_1",
  status: "published",
  livemode: true,
  gtin: "04006381333931",
  serial_number: null,
};

describe("passportLinks", () => {
  it("resolves a live published passport, QR on the GS1 Digital Link", () => {
    expect(passportLinks(base, hosts)).toEqual({
      public_url: "https://passports.example/p/pp_1",
      qr_target: "https://id.example/01/04006381333931",
      preview_url: null,
      resolves_publicly: true,
      not_resolvable_reason: null,
      gs1_digital_link: {
        uri: "https://id.example/01/04006381333931",
        gtin14: "04006381333931",
        serial: null,
        linkset_url: "https://id.example/01/04006381333931?linkType=linkset",
        unavailable_reason: null,
      },
    });
  });

  it("adds the serial with AI 21, percent-encoded", () => {
    const l = passportLinks({ ...base, serial_number: "SN-1/2" }, hosts);
    expect(l.gs1_digital_link.uri).toBe("https://id.example/01/04006381333931/21/SN-1%2F2");
    expect(l.gs1_digital_link.serial).toBe("SN-1/2");
  });

  it("stays at GTIN level for a serial AI 21 cannot carry (outside character set 82, or too long)", () => {
    for (const serial of ["SN 1", "Série-1", "x".repeat(21)]) {
      const l = passportLinks({ ...base, serial_number: serial }, hosts);
      expect(l.gs1_digital_link.uri).toBe("https://id.example/01/04006381333931");
      expect(l.gs1_digital_link.serial).toBeNull();
    }
  });

  it("says test_mode before not_published, and offers a preview", () => {
    const t = passportLinks({ ...base, livemode: false, status: "draft" }, hosts);
    expect(t).toMatchObject({
      resolves_publicly: false,
      not_resolvable_reason: "test_mode",
      preview_url: "https://passports.example/p/pp_1/preview",
    });
    for (const status of ["draft", "deactivated", "trashed"])
      expect(passportLinks({ ...base, status }, hosts).not_resolvable_reason).toBe("not_published");
    expect(passportLinks({ ...base, status: "trashed" }, hosts).preview_url).toBeNull();
    expect(passportLinks({ ...base, status: "readonly" }, hosts).resolves_publicly).toBe(true);
  });

  it("signs the preview for its passport, organization and mode when it holds the secret", () => {
    const now = Date.UTC(2026, 10, 28, 12, 30);
    const signed = passportLinks(
      { ...base, livemode: false, status: "draft" },
      { ...hosts, previewSecret: "s3cret", now: () => now },
    );
    const url = new URL(signed.preview_url!);
    expect(`${url.origin}${url.pathname}`).toBe("https://passports.example/p/pp_1/preview");
    expect(verifyPreviewToken("s3cret", "pp_1", url.searchParams.get("token")!, now)).toEqual({
      organizationId: "org_1",
      livemode: false,
    });
  });

  it("explains a missing or unusable GTIN and falls back to the public page for the QR", () => {
    const missing = passportLinks({ ...base, gtin: null }, hosts);
    expect(missing.gs1_digital_link).toEqual({
      uri: null,
      gtin14: null,
      serial: null,
      linkset_url: null,
      unavailable_reason: "gtin_missing",
    });
    expect(missing.qr_target).toBe(missing.public_url);
    expect(gs1DigitalLink("02000000000008", null, hosts.resolverBaseUrl).unavailable_reason).toBe(
      "gtin_invalid",
    );
    expect(gs1DigitalLink("04006381333932", null, hosts.resolverBaseUrl).unavailable_reason).toBe(
      "gtin_invalid",
    );
  });
});

describe("GS1 helpers", () => {
  it("recognises restricted circulation numbers", () => {
    expect(isRestrictedCirculation("02000000000008")).toBe(true);
    expect(isRestrictedCirculation("00412345678905")).toBe(true);
    expect(isRestrictedCirculation("04006381333931")).toBe(false);
    expect(isRestrictedCirculation("00000096385074")).toBe(false);
  });
  it("percent-encodes AI values", () => {
    expect(encodeAiValue("A-1_b.c~d")).toBe("A-1_b.c~d");
    expect(encodeAiValue("x y(1)")).toBe("x%20y%281%29");
  });
});
