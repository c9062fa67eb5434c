/**
 * QR codes of a passport's qr_target, made with the `qrcode` package: error correction level Q (25 % of the
 * symbol may be damaged: a label that is scratched, creased or printed small still scans), the quiet zone of four
 * modules that ISO/IEC 18004 requires, black on white. SVG scales to any print size; PNG is `size` pixels wide.
 */
import QRCode from "qrcode";

export const QR_QUIET_ZONE = 4;
export const QR_ERROR_CORRECTION = "Q" as const;
export const QR_SIZE_MIN = 64;
export const QR_SIZE_MAX = 2048;
export const QR_SIZE_DEFAULT = 512;

/** ?size=: pixels of a side, 64 to 2048; absent → 512; anything else → null (a 400). */
export function parseQrSize(text: string | null): number | null {
  if (text === null || text === "") return QR_SIZE_DEFAULT;
  if (!/^\d{1,4}$/.test(text)) return null;
  const n = Number(text);
  return n >= QR_SIZE_MIN && n <= QR_SIZE_MAX ? n : null;
}

const options = { errorCorrectionLevel: QR_ERROR_CORRECTION, margin: QR_QUIET_ZONE } as const;

export async function qrSvg(target: string, size: number): Promise<string> {
  return QRCode.toString(target, { ...options, type: "svg", width: size });
}

export async function qrPng(target: string, size: number): Promise<Buffer> {
  return QRCode.toBuffer(target, { ...options, type: "png", width: size });
}
