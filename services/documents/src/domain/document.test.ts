import { ApiError } from "@dpp/contract";
import { checkUpload, contentProblem, MAX_BYTES, sniffMimeType } from "./document";

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
const PDF = Buffer.from("%PDF-1.4\n");
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0]);
const WEBP = Buffer.concat([Buffer.from("RIFF"), Buffer.from([1, 2, 3, 4]), Buffer.from("WEBPVP8 ")]);

describe("sniffMimeType", () => {
  it("names each accepted type by its magic number, and nothing else", () => {
    expect([PNG, PDF, JPEG, WEBP].map(sniffMimeType)).toEqual([
      "image/png",
      "application/pdf",
      "image/jpeg",
      "image/webp",
    ]);
    expect(sniffMimeType(Buffer.from("GIF89a"))).toBeUndefined();
    expect(sniffMimeType(Buffer.from("RIFF1234WAVE"))).toBeUndefined();
  });
});

describe("contentProblem", () => {
  it("accepts bytes of the declared type and names a mismatch, an empty and an oversize file", () => {
    expect(contentProblem("image/png", 100, PNG)).toBeUndefined();
    expect(contentProblem("application/pdf", 100, PNG)).toMatchObject({
      code: "content_mismatch",
      message: expect.stringContaining("image/png, not the declared application/pdf"),
    });
    expect(contentProblem("image/png", 0, Buffer.alloc(0))?.code).toBe("empty_file");
    expect(contentProblem("image/png", MAX_BYTES + 1, PNG)?.code).toBe("file_too_large");
  });
});

describe("checkUpload", () => {
  const good = {
    type: "image",
    accessTier: "public",
    fileName: "photo.png",
    mimeType: "image/png",
    fileSize: 0,
    displayName: "",
  };
  it("defaults display_name to file_name", () => {
    expect(checkUpload(good).displayName).toBe("photo.png");
  });
  it("refuses every bad field at once, each at its pointer", () => {
    try {
      checkUpload({
        ...good,
        type: "video",
        accessTier: "",
        fileName: "a/b",
        mimeType: "image/gif",
        fileSize: MAX_BYTES + 1,
      });
      throw new Error("not refused");
    } catch (err) {
      expect(err).toBeInstanceOf(ApiError);
      const e = err as ApiError;
      expect(e.code).toBe("validation_failed");
      expect((e.details.issues as { source: { pointer: string } }[]).map((i) => i.source.pointer)).toEqual([
        "/type",
        "/access_tier",
        "/mime_type",
        "/file_name",
        "/file_size",
      ]);
    }
  });
});
