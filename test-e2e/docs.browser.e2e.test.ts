/**
 * The API reference in a real browser: headless Chromium (Debian's `chromium`
 * package, installed by `bash tools/bootstrap.sh --test`, which `npm test` runs
 * first, when missing) opens /docs on the running stack with every request to another origin
 * refused, finds the passports operations and takes a screenshot
 * (test-e2e/artifacts/docs.png, git-ignored). Also reads the raw document at
 * /v1/openapi.json without a credential.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type BrowserContext } from "playwright-core";
import { startHarness, type Harness } from "./support/harness";
import { SERVED_DOCUMENT } from "./support/openapi-validator";
import { ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, requireChromium } from "./support/browser";

const SCREENSHOT = path.join(ARTIFACTS, "docs.png");

let h: Harness;
let context: BrowserContext | undefined;
let profile: string | undefined;

beforeAll(async () => {
  h = await startHarness("e2e_docs");
});

afterAll(async () => {
  await context?.close();
  if (profile) fs.rmSync(profile, { recursive: true, force: true });
  await h?.close();
});

it("serves the raw OpenAPI document at /v1/openapi.json without a credential", async () => {
  const res = await h.request("/openapi.json");
  expect(res.status).toBe(200);
  expect(res.body).toEqual(SERVED_DOCUMENT);
});

it("renders /docs offline in headless Chromium with the passports operations", async () => {
  requireChromium();
  const origin = new URL(h.stack.baseUrl).origin;
  profile = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: CHROMIUM_ARGS,
  });
  // Offline: anything not served by the gateway is refused, so the page must be self-contained.
  // (Redoc's footer shows a vendor logo image from its CDN and hides it when it fails to load:
  // images are refused like the rest, and only they may be attempted.)
  const elsewhere: { url: string; type: string }[] = [];
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(origin) || url.startsWith("data:") || url.startsWith("blob:")) return route.continue();
    elsewhere.push({ url, type: route.request().resourceType() });
    return route.abort();
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const pageErrors: string[] = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  // The page is served with a strict Content-Security-Policy: it must render without violating it.
  const cspViolations: string[] = [];
  page.on("console", (m) => {
    if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
  });

  const response = await page.goto(`${origin}/docs`, { waitUntil: "load" });
  expect(response?.status()).toBe(200);
  expect(response?.headers()["request-id"]).toMatch(/^req_[0-9a-f]{24}$/);

  // The sidebar lists the tags; opening "Passports" shows its operations.
  const sidebar = page.getByText("Passports", { exact: true }).first();
  await sidebar.waitFor({ state: "visible", timeout: 60_000 });
  await sidebar.click();
  for (const text of ["List passports", "Create a passport", "Get a passport"])
    await page.getByText(text, { exact: true }).first().waitFor({ state: "visible", timeout: 30_000 });
  await page.getByText("Create a passport", { exact: true }).first().click();
  await page.waitForURL(/#\/passports\/createpassport$/, { timeout: 30_000 });
  const body = page.locator("body");
  // The operation's own page: its heading, its path and the request body schema.
  await page
    .getByRole("heading", { name: "Create a passport" })
    .first()
    .waitFor({ state: "visible", timeout: 30_000 });
  await page
    .getByText("/organizations/{organization}/passports", { exact: true })
    .first()
    .waitFor({ state: "visible" });
  await page.getByText("external_id", { exact: true }).first().waitFor({ state: "visible" });
  const text = await body.innerText();
  expect(text).toContain("passports:write"); // the operation's scope, from its security requirement
  expect(text).toContain("Idempotency-Key");
  expect(pageErrors).toEqual([]);
  expect(response?.headers()["content-security-policy"]).toMatch(/script-src 'sha256-/);
  // Redoc's vendor logo (an image from another origin) is the one thing the policy may refuse.
  expect(cspViolations.filter((v) => !/img-src/.test(v))).toEqual([]);

  fs.mkdirSync(ARTIFACTS, { recursive: true });
  fs.rmSync(SCREENSHOT, { force: true });
  await page.screenshot({ path: SCREENSHOT });

  const png = fs.readFileSync(SCREENSHOT);
  expect(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe(true);
  expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([1280, 900]); // IHDR width, height
  expect(png.length).toBeGreaterThan(20_000); // a rendered page, not a blank one
  expect(elsewhere.filter((r) => r.type !== "image")).toEqual([]);
}, 180_000);
