/**
 * The review page in a real browser (headless Chromium, test-e2e/support/browser.ts): a person of the
 * organization, added as the admin CLI's `person:add` adds one, signs in at the review_url a connector's publish
 * (202 human_approval_required) or proposal answered, sees the passport, the variant review and the publish
 * warnings, and decides; the API then shows the decision (passport published, proposal rejected or accepted) and
 * the feed its events. The URL alone is not enough: without a session the page asks to sign in and a posted
 * decision is refused, a person of another organization sees nothing and cannot decide, and a form without the
 * session's CSRF token is refused. Screenshots: test-e2e/artifacts/review-*.png (git-ignored).
 */
import fs from "node:fs";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { runAdmin } from "@dpp/admin";
import { envelope, startHarness, type Harness, type Tenant } from "./support/harness";
import { publishableTextile } from "./support/fixtures";
import { ARTIFACTS, launchChromium, pngSize } from "./support/browser";

jest.setTimeout(240_000);

let h: Harness;
let t: Tenant;
let stranger: Tenant;
let connector: { key: string; id: string; name: string };
let browser: Browser;
const contexts: BrowserContext[] = [];

interface PersonLogin {
  id: string;
  email: string;
  password: string;
}
let reviewer: PersonLogin;
let outsider: PersonLogin;

/** A person of an organization, through the admin CLI's own command (as `npm run admin -- person:add`). */
async function addPerson(organizationId: string, email: string, name: string): Promise<PersonLogin> {
  const password = `pw-${email}-long-enough`;
  process.env.DATABASE_URL = h.db.url;
  try {
    const person = (await runAdmin(
      ["person:add", "--org", organizationId, "--email", email, "--name", name, "--password", password],
      "/nonexistent",
    )) as { id: string; organization_id: string; email: string };
    expect(person).toMatchObject({ organization_id: organizationId, email });
    return { id: person.id, email, password };
  } finally {
    delete process.env.DATABASE_URL;
  }
}

/** A valid GTIN-13 from a 12-digit body: the GS1 check digit appended. */
function gtin13(body: number): string {
  const digits = String(body).padStart(12, "0");
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += Number(digits[11 - i]) * (i % 2 === 0 ? 3 : 1);
  return digits + String((10 - (sum % 10)) % 10);
}
let next = 400_638_200_000;
const freshGtin = () => gtin13(next++);

const base = () => `/organizations/${t.organizationId}/passports`;

async function draft(data: Record<string, unknown> = {}): Promise<string> {
  const created = await h.request(base(), {
    key: t.testKey,
    body: { category: "textile", data: publishableTextile({ gtin: freshGtin(), ...data }) },
  });
  h.expectStatus(created, 201);
  return created.body.id as string;
}

/** The connector asks to publish: nothing is published, a person must approve at the review_url. */
async function askToPublish(id: string, body?: unknown): Promise<{ approvalId: string; reviewUrl: string }> {
  const asked = await h.request(`${base()}/${id}/publish`, { key: connector.key, method: "POST", body });
  expect(asked.status).toBe(202);
  const e = envelope(asked);
  expect(e.code).toBe("human_approval_required");
  return { approvalId: e.details.approval_id as string, reviewUrl: e.details.review_url as string };
}

const approvalOf = (approvalId: string) =>
  h.request(`/organizations/${t.organizationId}/publish-approvals/${approvalId}`, { key: t.testKey });
const passportOf = (id: string) => h.request(`${base()}/${id}`, { key: t.testKey });

/** The feed's events of `type` about `id` (related.id or related.passport_id), waited for a while. */
async function eventsAbout(type: string, id: string): Promise<any[]> {
  let found: any[] = [];
  for (let i = 0; i < 100 && found.length === 0; i++) {
    const feed = await h.request(`/organizations/${t.organizationId}/events?limit=100`, { key: t.testKey });
    h.expectStatus(feed, 200);
    found = feed.body.data.filter(
      (e: any) => e.type === type && (e.related.id === id || e.related.passport_id === id),
    );
    if (found.length === 0) await new Promise((r) => setTimeout(r, 100));
  }
  return found;
}

async function newPage(): Promise<{ context: BrowserContext; page: Page; pageErrors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  contexts.push(context);
  // Offline: the page is served whole by the gateway; anything from another origin is refused.
  const origin = new URL(h.stack.baseUrl).origin;
  await context.route("**/*", (route) =>
    route.request().url().startsWith(origin) ? route.continue() : route.abort(),
  );
  const page = await context.newPage();
  const pageErrors: string[] = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  return { context, page, pageErrors };
}

/** Opens `url`; the page asks to sign in; the person signs in and lands back on `url`. */
async function signInAt(page: Page, url: string, who: PersonLogin): Promise<void> {
  await page.goto(url);
  expect(new URL(page.url()).pathname).toBe("/review/sign-in");
  await page.getByRole("heading", { name: "Sign in to review" }).waitFor();
  await page.getByLabel("Email").fill(who.email);
  await page.getByLabel("Password").fill(who.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL((u) => u.pathname !== "/review/sign-in" || u.search === "");
}

async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `review-${name}.png`);
  fs.rmSync(file, { force: true });
  await page.screenshot({ path: file, fullPage: true });
  const png = pngSize(file);
  expect(png.width).toBe(1280);
  expect(png.bytes).toBeGreaterThan(10_000); // a rendered page, not a blank one
}

beforeAll(async () => {
  h = await startHarness("rev34_review");
  t = await h.tenant("Acme", "pro");
  stranger = await h.tenant("Stranger", "pro");
  const c = await h.admin.createKey({
    organizationId: t.organizationId,
    livemode: false,
    kind: "connector",
    name: "Shop assistant",
  });
  connector = { key: c.key, id: c.record.id, name: c.record.name };
  reviewer = await addPerson(t.organizationId, "camille@acme.example", "Camille Martin");
  outsider = await addPerson(stranger.organizationId, "sam@stranger.example", "Sam Stranger");
  browser = await launchChromium();
});

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await browser?.close();
  await h?.close();
});

it("a person signs in at a connector's review_url, sees the passport, its variants and warnings, approves, and the API shows it published", async () => {
  const id = await draft({ product_name: "Linen shirt", product_description: "An eco-friendly shirt" });
  // The connector writes two sizes (assistant-written rows) and asks to publish with their review fingerprint.
  const [g1, g2] = [freshGtin(), freshGtin()];
  const added = await h.request(`${base()}/${id}/variants`, {
    key: connector.key,
    body: {
      variants: [
        { gtin: g1, size: "S" },
        { gtin: g2, size: "M", colour: "Navy" },
      ],
    },
  });
  h.expectStatus(added, 201);
  const review = await h.request(`${base()}/${id}/variants/review`, { key: connector.key });
  h.expectStatus(review, 200);
  expect(review.body.agent_written_count).toBe(2);
  const fingerprint = review.body.fingerprint as string;
  const { approvalId, reviewUrl } = await askToPublish(id, { variant_review_fingerprint: fingerprint });
  expect(reviewUrl).toBe(
    `${h.stack.baseUrl.replace(/\/v1$/, "")}/review/organizations/${t.organizationId}/publish-approvals/${approvalId}`,
  );
  expect((await passportOf(id)).body.status).toBe("draft");

  const { context, page, pageErrors } = await newPage();
  await signInAt(page, reviewUrl, reviewer);
  expect(page.url()).toBe(reviewUrl);
  const session = (await context.cookies()).find((k) => k.name === "dpp_review");
  expect(session).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/review" });

  await page.getByRole("heading", { name: "Publish approval" }).waitFor();
  expect(await page.locator("#state").innerText()).toBe("pending");
  // The passport as it stands.
  expect(await page.getByRole("heading", { name: new RegExp(`Passport ${id}`) }).innerText()).toContain(
    "version 1, draft",
  );
  const data = JSON.parse(await page.locator("#passport-data").innerText());
  expect(data).toMatchObject({ product_name: "Linen shirt", gtin: expect.any(String) });
  // The variant review: both rows, written by the connector, and the fingerprint the connector sent.
  const variants = await page.locator("#variant-review").innerText();
  expect(variants).toContain("2 of 2 written by an assistant");
  for (const g of [g1, g2]) expect(variants).toContain(`0${g}`);
  expect(variants).toContain("Navy");
  expect(variants).toContain(`assistant-written: Shop assistant (${connector.id})`);
  expect(await page.locator("#variant-fingerprint").innerText()).toBe(fingerprint);
  expect(await page.locator("#variant-condition").innerText()).toContain("approving publishes them");
  // The publish warnings: the environmental claim in the description.
  const warnings = await page.locator("#warnings").innerText();
  expect(warnings).toContain("environmental_claim_detected at /data/product_description");
  expect(await page.locator("#blockers").count()).toBe(0);
  await screenshot(page, "approval");

  await page.getByRole("button", { name: "Approve and publish" }).click();
  await page.locator("#decision").waitFor();
  expect(new URL(page.url()).pathname).toBe(new URL(reviewUrl).pathname);
  expect(await page.locator("#state").innerText()).toBe("approved");
  expect(await page.locator("#decision").innerText()).toContain(`approved by person:${reviewer.id}`);
  expect(await page.getByRole("button", { name: "Approve and publish" }).count()).toBe(0);
  expect(pageErrors).toEqual([]);

  // The API: the passport is published, the approval approved, and the feed has both events.
  const published = await passportOf(id);
  h.expectStatus(published, 200);
  expect(published.body).toMatchObject({ status: "published", version: 2 });
  const approval = await approvalOf(approvalId);
  expect(approval.body).toMatchObject({ state: "approved", variant_review_fingerprint: fingerprint });
  const publishEvents = await eventsAbout("passport.published", id);
  expect(publishEvents).toHaveLength(1);
  expect(publishEvents[0].related).toMatchObject({
    object: "passport",
    id,
    status: "published",
    previous_status: "draft",
    version: 2,
  });
  const approvedEvents = await eventsAbout("publish_approval.approved", approvalId);
  expect(approvedEvents).toHaveLength(1);
  expect(approvedEvents[0].related).toMatchObject({ id: approvalId, passport_id: id, state: "approved" });
});

it("the page says when the variants changed since the connector asked", async () => {
  const id = await draft();
  const added = await h.request(`${base()}/${id}/variants`, {
    key: connector.key,
    body: { variants: [{ gtin: freshGtin(), size: "L" }] },
  });
  h.expectStatus(added, 201);
  const review = await h.request(`${base()}/${id}/variants/review`, { key: connector.key });
  const asked = review.body.fingerprint as string;
  const { reviewUrl } = await askToPublish(id, { variant_review_fingerprint: asked });
  // A row added after the connector asked: the rows it asked to publish are not those on the passport now.
  h.expectStatus(
    await h.request(`${base()}/${id}/variants`, {
      key: t.testKey,
      body: { variants: [{ gtin: freshGtin(), size: "XL" }] },
    }),
    201,
  );
  const now = (await h.request(`${base()}/${id}/variants/review`, { key: t.testKey })).body.fingerprint;
  expect(now).not.toBe(asked);

  const { page } = await newPage();
  await signInAt(page, reviewUrl, reviewer);
  const condition = await page.locator("#variant-condition").innerText();
  expect(condition).toContain("variant_review_changed");
  expect(condition).toContain(asked);
  expect(await page.locator("#variant-fingerprint").innerText()).toBe(now);
  const variants = await page.locator("#variant-review").innerText();
  expect(variants).toContain("1 of 2 written by an assistant");
  expect(variants).toMatch(/XL\s+a person/);
});

it("approving runs the publish's checks on what the person saw: a page the passport moved under, or a blocker, is refused on the page", async () => {
  const id = await draft({ product_name: "Hemp tote" });
  const { approvalId, reviewUrl } = await askToPublish(id);
  const { page } = await newPage();
  await signInAt(page, reviewUrl, reviewer);
  expect(await page.getByRole("heading", { name: new RegExp(`Passport ${id}`) }).innerText()).toContain(
    "version 1",
  );

  // The passport changes (a required field removed) while the page is open.
  const patched = await h.request(`${base()}/${id}`, {
    key: t.testKey,
    method: "PATCH",
    headers: { "if-match": "*" },
    body: { data: { recycling_instructions: null } },
  });
  h.expectStatus(patched, 200);
  expect(patched.body.version).toBe(2);

  // Approving what the person saw (version 1) is refused: the passport is not that one any more.
  let answer = page.waitForResponse((r) => r.url().endsWith("/decide"));
  await page.getByRole("button", { name: "Approve and publish" }).click();
  expect((await answer).status()).toBe(409);
  expect(await page.locator("#refusal").innerText()).toContain("precondition_failed");

  // Back on the page: version 2, and what blocks publishing it, as a direct publish would answer.
  await page.getByRole("link", { name: "Back" }).click();
  expect(await page.getByRole("heading", { name: new RegExp(`Passport ${id}`) }).innerText()).toContain(
    "version 2",
  );
  expect(await page.locator("#blockers").innerText()).toContain("recycling_instructions");
  const direct = await h.request(`${base()}/${id}/validate`, {
    key: t.testKey,
    method: "POST",
    body: { dry_run: true },
  });
  h.expectStatus(direct, 200);
  expect(direct.body.publishable).toBe(false);
  answer = page.waitForResponse((r) => r.url().endsWith("/decide"));
  await page.getByRole("button", { name: "Approve and publish" }).click();
  expect((await answer).status()).toBe(409);
  expect(await page.locator("#refusal").innerText()).toContain("validation_failed");

  expect((await approvalOf(approvalId)).body.state).toBe("pending");
  expect((await passportOf(id)).body).toMatchObject({ status: "draft", version: 2 });
});

describe("proposals on the review page", () => {
  async function publishedPassport(): Promise<string> {
    const id = await draft({ product_name: "Wool coat" });
    h.expectStatus(await h.request(`${base()}/${id}/publish`, { key: t.testKey, method: "POST" }), 200);
    return id;
  }
  async function propose(id: string, productName: string) {
    const res = await h.request(`${base()}/${id}/proposals`, {
      key: connector.key,
      body: { fields: { data: { product_name: productName } } },
    });
    h.expectStatus(res, 201);
    return { proposalId: res.body.id as string, reviewUrl: res.body.review_url as string };
  }

  it("a person rejects a proposal: the API shows it rejected and the passport unchanged", async () => {
    const id = await publishedPassport();
    const before = (await passportOf(id)).body;
    const { proposalId, reviewUrl } = await propose(id, "Wool coat, navy");

    const { page, pageErrors } = await newPage();
    await signInAt(page, reviewUrl, reviewer);
    expect(page.url()).toBe(reviewUrl);
    // The overview lists it; its link leads back to the same page.
    await page.goto(`${new URL(reviewUrl).origin}/review`);
    await page.getByRole("heading", { name: "Waiting for review" }).waitFor();
    expect(await page.locator("body").innerText()).toContain("Signed in as Camille Martin");
    await page.getByRole("link", { name: `Proposal for passport ${id}` }).click();
    await page.waitForURL(reviewUrl);
    await page.getByRole("heading", { name: "Change proposal" }).waitFor();
    expect(await page.locator("#state").innerText()).toBe("pending");
    expect(JSON.parse(await page.locator("#proposed").innerText())).toEqual({
      data: { product_name: "Wool coat, navy" },
    });
    expect(JSON.parse(await page.locator("#passport-data").innerText()).product_name).toBe("Wool coat");
    // A published passport: no publish blockers to show.
    expect(await page.locator("#blockers").count()).toBe(0);
    await screenshot(page, "proposal");

    await page.getByRole("button", { name: "Reject" }).click();
    await page.locator("#decision").waitFor();
    expect(await page.locator("#state").innerText()).toBe("rejected");
    expect(await page.getByRole("button", { name: "Accept the change" }).count()).toBe(0);
    expect(pageErrors).toEqual([]);

    const proposal = await h.request(`/organizations/${t.organizationId}/proposals/${proposalId}`, {
      key: t.testKey,
    });
    h.expectStatus(proposal, 200);
    expect(proposal.body).toMatchObject({ state: "rejected", decided_at: expect.any(String) });
    const after = await passportOf(id);
    expect(after.body).toEqual(before);
    expect(await eventsAbout("proposal.rejected", proposalId)).toHaveLength(1);
  });

  it("a person accepts a proposal: the passport takes the fields as a new version", async () => {
    const id = await publishedPassport();
    const before = (await passportOf(id)).body;
    const { proposalId, reviewUrl } = await propose(id, "Wool coat, grey");

    const { page } = await newPage();
    await signInAt(page, reviewUrl, reviewer);
    await page.getByRole("button", { name: "Accept the change" }).click();
    await page.locator("#decision").waitFor();
    expect(await page.locator("#state").innerText()).toBe("accepted");

    const proposal = await h.request(`/organizations/${t.organizationId}/proposals/${proposalId}`, {
      key: t.testKey,
    });
    expect(proposal.body.state).toBe("accepted");
    const after = (await passportOf(id)).body;
    expect(after).toMatchObject({
      status: "published",
      version: before.version + 1,
      data: { ...before.data, product_name: "Wool coat, grey" },
    });
    expect(await eventsAbout("proposal.accepted", proposalId)).toHaveLength(1);
  });
});

it("the review_url of a connector's refusals leads to the passport's page, with what waits for a decision", async () => {
  const id = await draft({ product_name: "Cork sandal" });
  h.expectStatus(await h.request(`${base()}/${id}/publish`, { key: t.testKey, method: "POST" }), 200);
  const origin = new URL(h.stack.baseUrl).origin;
  const passportPage = `${origin}/review/organizations/${t.organizationId}/passports/${id}`;

  // The connector may not change a published passport, nor add sizes to it: both refusals name the page.
  const patched = await h.request(`${base()}/${id}`, {
    key: connector.key,
    method: "PATCH",
    headers: { "if-match": "*" },
    body: { data: { product_name: "Cork sandal, tan" } },
  });
  expect([patched.status, envelope(patched).code]).toEqual([409, "connector_writes_drafts_only"]);
  expect(envelope(patched).details.review_url).toBe(passportPage);
  const sized = await h.request(`${base()}/${id}/variants`, {
    key: connector.key,
    body: { variants: [{ gtin: freshGtin(), size: "38" }] },
  });
  expect([sized.status, envelope(sized).code]).toEqual([409, "connector_writes_drafts_only"]);
  expect(envelope(sized).details.review_url).toBe(`${passportPage}/variants/review`);
  // It proposes the change instead.
  const proposed = await h.request(`${base()}/${id}/proposals`, {
    key: connector.key,
    body: { fields: { data: { product_name: "Cork sandal, tan" } } },
  });
  h.expectStatus(proposed, 201);

  const { page, pageErrors } = await newPage();
  await signInAt(page, passportPage, reviewer);
  expect(page.url()).toBe(passportPage);
  await page.getByRole("heading", { name: "Passport", exact: true }).waitFor();
  expect(JSON.parse(await page.locator("#passport-data").innerText()).product_name).toBe("Cork sandal");
  expect(await page.locator("#variant-review").innerText()).toContain(
    "No assistant-written sizes or colours",
  );
  expect(await page.locator("#blockers").count()).toBe(0);
  await page.getByRole("link", { name: "A connector proposed a change" }).click();
  await page.waitForURL(proposed.body.review_url);
  await page.getByRole("heading", { name: "Change proposal" }).waitFor();

  // The variants' review_url shows the same page, at its variant review.
  await page.goto(`${passportPage}/variants/review`);
  expect(page.url()).toBe(`${passportPage}#variant-review`);
  await page.locator("#variant-review").waitFor();
  expect(pageErrors).toEqual([]);
});

describe("the URL alone is not enough", () => {
  it("without signing in the page asks to sign in, and a posted decision is refused", async () => {
    const id = await draft();
    const { approvalId, reviewUrl } = await askToPublish(id);
    const { context, page } = await newPage();

    const res = await page.goto(reviewUrl);
    expect(res?.status()).toBe(200);
    expect(new URL(page.url()).pathname).toBe("/review/sign-in");
    expect(new URL(page.url()).searchParams.get("next")).toBe(new URL(reviewUrl).pathname);
    await page.getByRole("heading", { name: "Sign in to review" }).waitFor();
    expect(await page.getByRole("button", { name: "Approve and publish" }).count()).toBe(0);
    expect(await page.locator("body").innerText()).not.toContain(id);

    // A wrong password does not sign in.
    await page.getByLabel("Email").fill(reviewer.email);
    await page.getByLabel("Password").fill("not-the-password-at-all");
    const wrong = page.waitForResponse(
      (r) => r.url().endsWith("/review/sign-in") && r.request().method() === "POST",
    );
    await page.getByRole("button", { name: "Sign in" }).click();
    expect((await wrong).status()).toBe(401);
    expect(await page.locator(".refusal").innerText()).toContain("Wrong email or password");
    expect((await context.cookies()).filter((k) => k.name === "dpp_review")).toEqual([]);

    // The decision's form, posted without a session (as a forged form would): sent to sign in, nothing decided.
    const posted = await context.request.post(`${reviewUrl}/decide`, {
      form: { decision: "approve", csrf: "guessed", version: "1" },
      maxRedirects: 0,
    });
    expect(posted.status()).toBe(303);
    expect(posted.headers().location).toBe(
      `/review/sign-in?next=${encodeURIComponent(new URL(reviewUrl).pathname)}`,
    );
    expect((await approvalOf(approvalId)).body.state).toBe("pending");
    expect((await passportOf(id)).body.status).toBe("draft");
  });

  it("signing out ends the session: the same cookie no longer opens the page", async () => {
    const id = await draft();
    const { approvalId, reviewUrl } = await askToPublish(id);
    const { context, page } = await newPage();
    await signInAt(page, reviewUrl, reviewer);
    await page.getByRole("heading", { name: "Publish approval" }).waitFor();
    const cookie = (await context.cookies()).find((k) => k.name === "dpp_review")!;

    await page.goto(`${new URL(reviewUrl).origin}/review`);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in to review" }).waitFor();
    expect((await context.cookies()).filter((k) => k.name === "dpp_review")).toEqual([]);

    // The old cookie value, sent again, is refused: the session ended on the server, not only in the browser.
    await context.addCookies([cookie]);
    await page.goto(reviewUrl);
    expect(new URL(page.url()).pathname).toBe("/review/sign-in");
    expect((await approvalOf(approvalId)).body.state).toBe("pending");
  });

  it("a person of another organization cannot see or approve it", async () => {
    const id = await draft();
    const { approvalId, reviewUrl } = await askToPublish(id);
    const { context, page } = await newPage();

    await signInAt(page, reviewUrl, outsider);
    expect(await page.getByRole("heading", { name: "Not found" }).count()).toBe(1);
    expect(await page.locator("body").innerText()).not.toContain(id);
    expect(await page.getByRole("button", { name: "Approve and publish" }).count()).toBe(0);

    // Their own overview lists nothing of Acme's; its sign-out form carries their own CSRF token.
    await page.goto(`${new URL(reviewUrl).origin}/review`);
    expect(new URL(page.url()).pathname).toBe(`/review/organizations/${stranger.organizationId}`);
    expect(await page.locator("body").innerText()).toContain("Nothing waits for review.");
    const csrf = await page.locator('input[name="csrf"]').first().inputValue();
    expect(csrf.length).toBeGreaterThan(20);

    // With a valid session and its own token, a decision on Acme's approval is refused.
    const posted = await context.request.post(`${reviewUrl}/decide`, {
      form: { decision: "approve", csrf, version: "1" },
      maxRedirects: 0,
    });
    expect(posted.status()).toBe(404);
    // The same through their own organization's path: the approval is not theirs.
    const ownPath = `${new URL(reviewUrl).origin}/review/organizations/${stranger.organizationId}/publish-approvals/${approvalId}`;
    const viaOwn = await context.request.post(`${ownPath}/decide`, {
      form: { decision: "approve", csrf, version: "1" },
      maxRedirects: 0,
    });
    expect(viaOwn.status()).toBe(404);
    await page.goto(ownPath);
    expect(await page.getByRole("heading", { name: "Not found" }).count()).toBe(1);

    expect((await approvalOf(approvalId)).body.state).toBe("pending");
    expect((await passportOf(id)).body.status).toBe("draft");
  });

  it("a form posted without the session's CSRF token is refused; with it, the decision is made", async () => {
    const id = await draft();
    const { approvalId, reviewUrl } = await askToPublish(id);
    const { page } = await newPage();
    await signInAt(page, reviewUrl, reviewer);
    await page.getByRole("heading", { name: "Publish approval" }).waitFor();

    // The page's own form, its CSRF field removed, then with another value.
    for (const tamper of ["remove", "replace"] as const) {
      await page.goto(reviewUrl);
      // Runs in the page (the DOM's input element; this project's types have no DOM library).
      await page
        .locator('form:has(button[value="approve"]) input[name="csrf"]')
        .evaluate((field: any, how) => {
          if (how === "remove") field.remove();
          else field.value = "x".repeat(field.value.length);
        }, tamper);
      const answer = page.waitForResponse((r) => r.url().endsWith("/decide"));
      await page.getByRole("button", { name: "Approve and publish" }).click();
      expect((await answer).status()).toBe(403);
      await page.getByRole("heading", { name: "Refused" }).waitFor();
      expect((await approvalOf(approvalId)).body.state).toBe("pending");
      expect((await passportOf(id)).body.status).toBe("draft");
    }

    // The untouched form decides.
    await page.goto(reviewUrl);
    await page.getByRole("button", { name: "Reject" }).click();
    await page.locator("#decision").waitFor();
    expect((await approvalOf(approvalId)).body.state).toBe("rejected");
    expect((await passportOf(id)).body.status).toBe("draft");
    expect(await eventsAbout("publish_approval.rejected", approvalId)).toHaveLength(1);
  });
});
