/**
 * Headless Chromium for the browser tests: Debian's `chromium` package (installed by
 * `bash tools/bootstrap.sh --test`, which `npm test` runs first, when missing), driven by playwright-core.
 * A test that needs it fails with how to install it when it is missing; it is never skipped.
 */
import fs from "node:fs";
import path from "node:path";
import { chromium, type Browser } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
/** Where browser tests leave their screenshots (git-ignored). */
export const ARTIFACTS = path.join(__dirname, "..", "artifacts");

/** The flags Chromium needs here: no sandbox (containers), no GPU, nothing fetched in the background. */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export function requireChromium(): void {
  if (!fs.existsSync(CHROMIUM))
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: the browser test needs it. ` +
        "Install it with `apt-get install -y chromium` (or run `bash tools/bootstrap.sh --test`, " +
        "which `npm test` does), or set CHROMIUM_PATH.",
    );
}

/** A headless Chromium; each test opens its own context (its own cookies) with `browser.newContext()`. */
export async function launchChromium(): Promise<Browser> {
  requireChromium();
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

/** Checks a screenshot file is a PNG of the given size that shows a rendered page (not a blank one). */
export function pngSize(file: string): { width: number; height: number; bytes: number } {
  const png = fs.readFileSync(file);
  if (!png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    throw new Error(`${file} is not a PNG`);
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20), bytes: png.length };
}
