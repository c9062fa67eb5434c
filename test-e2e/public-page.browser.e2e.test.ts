/**
 * A shopper's scan in a real browser: headless Chromium (Debian's `chromium`, as the /docs browser test launches
 * it) at phone width opens qr_target of a published passport, follows the resolver to the public page, sees the
 * product name, the composition, a photo and a document link, switches to French, passes axe-core with no serious
 * or critical violation in both languages, and leaves a screenshot (test-e2e/artifacts/public-page-phone.png,
 * git-ignored). Everything but this machine's own listeners is refused: the page needs nothing from elsewhere.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { startHarness, type Harness, type Tenant } from "./support/harness";
import { gtin13, makePassport, type Made } from "./support/public";

jest.setTimeout(180_000);

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ARTIFACTS = path.join(__dirname, "artifacts");
const SCREENSHOT = path.join(ARTIFACTS, "public-page-phone.png");
const PHONE = { width: 390, height: 844 };
const AXE = require.resolve("axe-core/axe.min.js");

let h: Harness;
let t: Tenant;
let p: Made;
let context: BrowserContext | undefined;
let profile: string | undefined;

beforeAll(async () => {
  h = await startHarness("pub35_browser");
  t = await h.tenant("Acme", "pro");
  p = await makePassport(h, t, {
    key: t.liveKey,
    gtin: gtin13("700000000001"),
    data: { brand_name: "Acme Basics", carbon_footprint: { value: 4.2, unit: "kgCO2e" } },
    variants: [{ gtin: gtin13("700000000002"), size: "M", colour: "Navy" }],
    photo: true,
    pdf: true,
  });
});
afterAll(async () => {
  await context?.close();
  if (profile) fs.rmSync(profile, { recursive: true, force: true });
  await h?.close();
});

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

async function seriousViolations(page: Page): Promise<{ id: string; help: string; targets: string[] }[]> {
  await page.addScriptTag({ path: AXE });
  // Evaluated in the page (axe-core's global), written as text: this project's types have no DOM.
  const violations = (await page.evaluate("axe.run().then((r) => r.violations)")) as AxeViolation[];
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => ({ id: v.id, help: v.help, targets: v.nodes.map((n) => n.target.join(" ")) }));
}

it("opens qr_target on a phone, lands on the public page, switches to French and passes axe", async () => {
  if (!fs.existsSync(CHROMIUM))
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: the browser test needs it. ` +
        "Install it with `apt-get install -y chromium` (or run `bash tools/bootstrap.sh --test`, " +
        "which `npm test` does), or set CHROMIUM_PATH.",
    );
  profile = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: PHONE,
    locale: "en-GB",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  // Offline: only this machine's listeners (the public surface, the documents file listener) answer.
  const elsewhere: string[] = [];
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith("http://127.0.0.1:") || url.startsWith("data:")) return route.continue();
    elsewhere.push(url);
    return route.abort();
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const pageErrors: string[] = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));

  expect(p.links.qr_target).toBe(`${h.stack.resolverUrl}/01/${p.gtin14}`);
  const response = await page.goto(p.links.qr_target, { waitUntil: "load" });
  expect(response?.status()).toBe(200);
  expect(page.url()).toBe(p.links.public_url);
  expect(response?.request().redirectedFrom()?.url()).toBe(p.links.qr_target);

  await page.getByRole("heading", { level: 1, name: "Organic T-shirt" }).waitFor({ state: "visible" });
  const composition = page.locator("section#composition");
  await composition.getByRole("heading", { name: "Composition" }).waitFor({ state: "visible" });
  expect(await composition.innerText()).toMatch(/cotton\s+100 %/);
  const photo = page.getByRole("img", { name: "Photo: Front view" });
  await photo.scrollIntoViewIfNeeded();
  await photo.waitFor({ state: "visible" });
  await page.waitForFunction("[...document.images].every((i) => i.complete)", undefined, { timeout: 30_000 });
  expect(await photo.evaluate((i) => (i as unknown as { naturalWidth: number }).naturalWidth)).toBe(64);
  const doc = page.getByRole("link", { name: "EU declaration of conformity" });
  await doc.waitFor({ state: "visible" });
  expect(await doc.getAttribute("href")).toMatch(new RegExp(`^/p/${p.id}/documents/doc_`));
  // Readable on a phone: nothing wider than the screen.
  expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(PHONE.width);
  expect(await seriousViolations(page)).toEqual([]);

  await page.getByRole("link", { name: "Français" }).click();
  await page.waitForURL(`${p.links.public_url}?lang=fr`);
  expect(await page.locator("html").getAttribute("lang")).toBe("fr");
  await page
    .getByRole("heading", { name: "Entretien, réparation et fin de vie" })
    .waitFor({ state: "visible" });
  await page.getByRole("heading", { level: 1, name: "Organic T-shirt" }).waitFor({ state: "visible" });
  expect(await page.locator("section#composition").innerText()).toContain("Composition en fibres");
  expect(await seriousViolations(page)).toEqual([]);

  fs.mkdirSync(ARTIFACTS, { recursive: true });
  fs.rmSync(SCREENSHOT, { force: true });
  await page.screenshot({ path: SCREENSHOT, fullPage: true });
  const png = fs.readFileSync(SCREENSHOT);
  expect(png.subarray(1, 4).toString()).toBe("PNG");
  expect(png.readUInt32BE(16)).toBe(PHONE.width); // IHDR width
  expect(png.readUInt32BE(20)).toBeGreaterThan(PHONE.height); // the whole page, taller than the screen
  expect(pageErrors).toEqual([]);
  expect(elsewhere).toEqual([]);
});
