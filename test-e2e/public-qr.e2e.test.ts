/**
 * QR codes of a passport's qr_target from the public surface (docs/decisions/0059-public-surface.md): the PNG is
 * decoded (jsQR over the pixels pngjs reads) and holds qr_target, with the 4-module quiet zone; the SVG scales to
 * the size asked; a size out of range is refused.
 */
import jsQR from "jsqr";
import { PNG } from "pngjs";
import { startHarness, type Harness, type Tenant } from "./support/harness";
import { get, gtin13, makePassport, type Made } from "./support/public";

jest.setTimeout(180_000);

let h: Harness;
let t: Tenant;
let p: Made;

beforeAll(async () => {
  h = await startHarness("pub35_qr");
  t = await h.tenant("Acme", "pro");
  p = await makePassport(h, t, { key: t.liveKey, gtin: gtin13("600000000001") });
});
afterAll(async () => {
  await h?.close();
});

it("answers a PNG of the size asked that decodes to qr_target, with a quiet zone of 4 modules", async () => {
  const res = await get(`${p.links.public_url}/qr.png?size=400`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("image/png");
  expect(res.headers.get("etag")).toMatch(/^".+"$/);
  const png = PNG.sync.read(res.bytes);
  expect([png.width, png.height]).toEqual([400, 400]);
  const code = jsQR(new Uint8ClampedArray(png.data), png.width, png.height);
  expect(code?.data).toBe(p.links.qr_target);
  expect(p.links.qr_target).toBe(`${h.stack.resolverUrl}/01/${p.gtin14}`);
  // The first dark pixel of the middle row of the top finder pattern lies past the quiet zone.
  const modules = code!.version * 4 + 17 + 2 * 4;
  const moduleSize = png.width / modules;
  const dark = (x: number, y: number) => png.data[(y * png.width + x) * 4]! < 128;
  const y = Math.round(code!.location.topLeftFinderPattern.y);
  let firstDark = 0;
  while (!dark(firstDark, y)) firstDark++;
  expect(firstDark).toBeGreaterThanOrEqual(Math.floor(4 * moduleSize) - 1);
  expect(firstDark).toBeLessThanOrEqual(Math.ceil(4 * moduleSize) + 1);
});

it("answers 512 px by default and an SVG that scales", async () => {
  const png = PNG.sync.read((await get(`${p.links.public_url}/qr.png`)).bytes);
  expect(png.width).toBe(512);
  const svg = await get(`${p.links.public_url}/qr.svg?size=256`);
  expect(svg.status).toBe(200);
  expect(svg.headers.get("content-type")).toBe("image/svg+xml");
  expect(svg.text).toMatch(/^<svg [^>]*width="256" height="256" viewBox="0 0 \d+ \d+"/);
});

it("refuses a size out of range or not a number", async () => {
  for (const size of ["10", "5000", "abc", "-1"]) {
    const res = await get(`${p.links.public_url}/qr.png?size=${size}`, { Accept: "application/json" });
    expect([size, res.status]).toEqual([size, 400]);
    expect(JSON.parse(res.text).error.code).toBe("invalid_request");
  }
});
