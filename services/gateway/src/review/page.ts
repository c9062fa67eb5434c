/**
 * The review page (docs/decisions/0057): where a person of an organization approves or rejects a connector's
 * publish and accepts or rejects change proposals. Served by the gateway process under /review, outside /v1:
 * server-rendered HTML, forms that work without JavaScript. A person signs in with email and password; the
 * session cookie (HttpOnly, SameSite=Strict, Path=/review, Secure on https) is valid on these pages only: the
 * API reads the Authorization header alone and never a cookie. Every form carries the session's CSRF token; the
 * URL alone never approves anything. Decisions go to passport as a `person` credential, which publishes with
 * the same checks as a direct publish; a refusal is shown on the page.
 */
import { timingSafeEqual } from "node:crypto";
import express from "express";
import type { Kysely } from "kysely";
import { ApiError } from "@dpp/contract";
import type { ClientOf, RequestContext } from "@dpp/kit";
import { passportV1, timestampDate, type variantsUnitsV1 } from "@dpp/proto";
import type { GatewayDB } from "../store/schema";
import type { IdentityRepository } from "../modules/identity/identity.repository";
import { planContext } from "../modules/identity/authenticator";
import { newRequestId } from "../http/middleware/locals";
import { statusJson } from "../modules/passport/mapping";
import type { RateLimiter } from "../ratelimit/limiter";
import { clientAddress } from "../http/middleware/rate-limit";
import { closeSession, openSession, sessionPerson, signIn, type Person } from "./people";

type PassportClient = ClientOf<typeof passportV1.PassportService>;
type VariantsUnitsClient = ClientOf<typeof variantsUnitsV1.VariantsUnitsService>;

export interface ReviewDeps {
  db: Kysely<GatewayDB>;
  identity: IdentityRepository;
  passport: PassportClient;
  /** The passport's sizes and colours and their review fingerprint (GET .../variants/review). */
  variantsUnits: VariantsUnitsClient;
  /**
   * Failed sign-ins count against the client address in the gateway's failed-authentication bucket (its own
   * counter, beside the API's): over the limit, sign-in is refused before the password is even checked.
   */
  rateLimiter?: RateLimiter;
}

/** The publish refusals about the variant review: the page states that condition itself, per approval. */
const VARIANT_REVIEW_RULES = new Set(["variant_review_required", "variant_review_changed"]);

const COOKIE = "dpp_review";

const esc = (s: unknown) =>
  String(s).replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!,
  );

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<meta name="viewport" content="width=device-width,initial-scale=1">
<style>table{border-collapse:collapse}th,td{text-align:left;padding:.2rem .6rem;border-bottom:1px solid #ddd}body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}pre{background:#f4f4f4;padding:1rem;overflow:auto}
.refusal{background:#fde8e8;padding:1rem}.done{background:#e6f6e6;padding:1rem}form.inline{display:inline}</style></head>
<body><h1>${esc(title)}</h1>${body}</body></html>`;
}

function cookieOf(req: express.Request): string | undefined {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === COOKIE) return v.join("=");
  }
  return undefined;
}

function send(res: express.Response, status: number, html: string): void {
  res
    .status(status)
    .set({
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "content-security-policy":
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      "x-content-type-options": "nosniff",
      "referrer-policy": "same-origin",
    })
    .send(html);
}

/** Where a relative `next` may send a person after signing in: this page's paths only. */
const safeNext = (next: unknown) =>
  typeof next === "string" && /^\/review\/[A-Za-z0-9_\-/]*$/.test(next) ? next : "/review";

/** The page of one item of the person's organization. */
const itemPath = (person: { organization_id: string }, kind: "publish-approvals" | "proposals", id: string) =>
  `/review/organizations/${encodeURIComponent(person.organization_id)}/${kind}/${encodeURIComponent(id)}`;

/** The item id of the path. */
const idOf = (req: express.Request) => String(req.params.id);

/** The form's CSRF token is the session's (compared in constant time). */
function sameToken(sent: unknown, expected: string): boolean {
  if (typeof sent !== "string") return false;
  const a = Buffer.from(sent);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

const csrfField = (p: { csrf: string }) => `<input type="hidden" name="csrf" value="${esc(p.csrf)}">`;

const date = (t: Parameters<typeof timestampDate>[0] | undefined) =>
  t ? timestampDate(t).toISOString() : "";

export function reviewRouter(deps: ReviewDeps): express.Router {
  const r = express.Router();
  r.use(express.urlencoded({ extended: false, limit: "8kb" }));

  /** The person's context at passport: their organization, a mode, their plan, credential kind person. */
  async function contextFor(person: Person, livemode: boolean): Promise<RequestContext> {
    const org = await deps.identity.findOrganization(person.organization_id);
    return {
      requestId: newRequestId(),
      organizationId: person.organization_id,
      livemode,
      credentialKind: "person",
      ...(org ? { plan: planContext(org.plan_id, org.subscription_status) } : {}),
    };
  }

  /** The signed-in person of the organization in the path, or a redirect to sign in (then undefined). */
  async function personFor(req: express.Request, res: express.Response) {
    const person = await sessionPerson(deps.db, cookieOf(req));
    if (!person) {
      // A form posted without a session is not replayed after signing in: the person sees the item again.
      const next = req.method === "GET" ? req.originalUrl : req.originalUrl.replace(/\/decide$/, "");
      res.redirect(303, `/review/sign-in?next=${encodeURIComponent(next)}`);
      return undefined;
    }
    const org = typeof req.params.org === "string" ? req.params.org : undefined;
    if (org !== undefined && org !== person.organization_id) {
      send(res, 404, page("Not found", "<p>Nothing to review here for your organization.</p>"));
      return undefined;
    }
    return person;
  }

  /** Finds an item in test mode, then live mode (the review URL does not name the mode). */
  async function inEitherMode<T>(person: Person, fn: (ctx: RequestContext) => Promise<T>) {
    for (const livemode of [false, true]) {
      const ctx = await contextFor(person, livemode);
      try {
        return { ctx, value: await fn(ctx) };
      } catch (err) {
        if (!(err instanceof ApiError && err.code === "resource_not_found")) throw err;
      }
    }
    return undefined;
  }

  const wrap =
    (fn: (req: express.Request, res: express.Response) => Promise<void>) =>
    (req: express.Request, res: express.Response) => {
      fn(req, res).catch((err: unknown) =>
        send(
          res,
          500,
          page("Something went wrong", `<p>${esc(err instanceof Error ? err.message : err)}</p>`),
        ),
      );
    };

  r.get("/sign-in", (req, res) => {
    send(
      res,
      200,
      page(
        "Sign in to review",
        `<form method="post" action="/review/sign-in">
<input type="hidden" name="next" value="${esc(safeNext(req.query.next))}">
<p><label>Email <input type="email" name="email" autocomplete="username" required></label></p>
<p><label>Password <input type="password" name="password" autocomplete="current-password" required></label></p>
<p><button type="submit">Sign in</button></p></form>`,
      ),
    );
  });

  r.post(
    "/sign-in",
    wrap(async (req, res) => {
      const body = req.body as Record<string, unknown>;
      const limitId = `review-sign-in:${clientAddress(req)}`;
      const limited = await deps.rateLimiter?.overLimit("auth_failures", limitId);
      if (limited) return tooMany(res, limited, body.next);
      const person = await signIn(deps.db, String(body.email ?? ""), String(body.password ?? ""));
      if (!person) {
        const over = await deps.rateLimiter?.countFailure("auth_failures", limitId);
        if (over) return tooMany(res, over, body.next);
        send(
          res,
          401,
          page(
            "Sign in to review",
            `<p class="refusal">Wrong email or password.</p>
<p><a href="/review/sign-in?next=${encodeURIComponent(safeNext(body.next))}">Try again</a></p>`,
          ),
        );
        return;
      }
      const { cookie } = await openSession(deps.db, person.id);
      const secure = req.secure ? "; Secure" : "";
      res.setHeader("set-cookie", `${COOKIE}=${cookie}; HttpOnly; SameSite=Strict; Path=/review${secure}`);
      res.redirect(303, safeNext(body.next));
    }),
  );

  r.post(
    "/sign-out",
    wrap(async (req, res) => {
      await closeSession(deps.db, cookieOf(req));
      res.setHeader("set-cookie", `${COOKIE}=; HttpOnly; SameSite=Strict; Path=/review; Max-Age=0`);
      res.redirect(303, "/review/sign-in");
    }),
  );

  r.get(
    "/",
    wrap(async (req, res) => {
      const person = await personFor(req, res);
      if (!person) return;
      res.redirect(303, `/review/organizations/${encodeURIComponent(person.organization_id)}`);
    }),
  );

  r.get(
    "/organizations/:org",
    wrap(async (req, res) => {
      const person = await personFor(req, res);
      if (!person) return;
      const items: string[] = [];
      for (const livemode of [false, true]) {
        const ctx = await contextFor(person, livemode);
        const list = await deps.passport.listReviewItems({}, { context: ctx });
        const mode = livemode ? "live" : "test";
        for (const a of list.approvals)
          items.push(
            `<li><a href="/review/organizations/${esc(person.organization_id)}/publish-approvals/${esc(a.id)}">Publish of passport ${esc(a.passportId)}</a> (${mode})</li>`,
          );
        for (const p of list.proposals)
          items.push(
            `<li><a href="/review/organizations/${esc(person.organization_id)}/proposals/${esc(p.id)}">Proposal for passport ${esc(p.passportId)}</a> (${mode}, ${esc(p.state)})</li>`,
          );
      }
      send(
        res,
        200,
        page(
          "Waiting for review",
          `<p>Signed in as ${esc(person.name)} (${esc(person.email)}).</p>
${items.length ? `<ul>${items.join("")}</ul>` : "<p>Nothing waits for review.</p>"}
<form method="post" action="/review/sign-out">${csrfField(person)}<button>Sign out</button></form>`,
        ),
      );
    }),
  );

  /**
   * The passport as the person decides on it: its data, its sizes and colours with who wrote them (the variant
   * review), the warnings publishing gives and, for a publish, what would block it. `approval`: the publish
   * asked, with the variant review fingerprint the connector sent (the rows it asked to publish).
   */
  async function passportSection(
    ctx: RequestContext,
    passportId: string,
    approval?: { variantReviewFingerprint?: string },
  ) {
    const [got, validated, review] = await Promise.all([
      deps.passport.getPassport({ id: passportId }, { context: ctx }),
      deps.passport.validatePassport({ id: passportId, dryRun: true }, { context: ctx }),
      deps.variantsUnits.getVariantReview({ passportId }, { context: ctx }),
    ]);
    const p = got.passport!;
    const v = validated.validation!;
    const warnings = v.issues.filter((i) => i.severity === passportV1.ValidationSeverity.WARNING);
    // Validation knows no fingerprint: the variant review's condition is stated below, from the approval's.
    const blockers = v.issues.filter(
      (i) => i.severity === passportV1.ValidationSeverity.ERROR && !VARIANT_REVIEW_RULES.has(i.rule),
    );
    const rows = review.variants.map(
      (r) =>
        `<tr><td>${esc(r.gtin)}</td><td>${esc(r.size ?? "")}</td><td>${esc(r.colour ?? "")}</td><td>${
          r.agentWritten
            ? `assistant-written: ${esc(r.agentWritten.keyName)} (${esc(r.agentWritten.keyId)}) at ${esc(date(r.agentWritten.at))}`
            : "a person"
        }</td></tr>`,
    );
    let condition = "";
    if (review.agentWrittenCount > 0 && approval) {
      const recorded = approval.variantReviewFingerprint;
      condition =
        recorded === review.fingerprint
          ? `<p class="done" id="variant-condition">The connector asked to publish these ${review.agentWrittenCount} assistant-written rows as listed (fingerprint ${esc(recorded)}): approving publishes them.</p>`
          : recorded
            ? `<p class="refusal" id="variant-condition"><strong>variant_review_changed</strong>: the sizes and colours changed since the connector asked (it sent fingerprint ${esc(recorded)}): the rows below are not those it asked to publish. Reject, and let the connector ask again.</p>`
            : `<p class="refusal" id="variant-condition"><strong>variant_review_required</strong>: the connector asked without the fingerprint of these assistant-written rows: nobody reviewed them. Reject, and let the connector ask again with it.</p>`;
    }
    const variants = `<h2>Variants</h2><div id="variant-review">${
      rows.length
        ? `<p>${review.agentWrittenCount} of ${rows.length} written by an assistant; review fingerprint <code id="variant-fingerprint">${esc(review.fingerprint)}</code>.</p>
<table><thead><tr><th>GTIN</th><th>Size</th><th>Colour</th><th>Written by</th></tr></thead><tbody>${rows.join("")}</tbody></table>`
        : ""
    }${review.agentWrittenCount === 0 ? "<p>No assistant-written sizes or colours to review.</p>" : ""}${condition}</div>`;
    return {
      passport: p,
      html: `<h2>Passport ${esc(p.id)} (version ${p.version}, ${esc(statusJson(p.status))})</h2>
<pre id="passport-data">${esc(JSON.stringify(JSON.parse(p.dataJson || "{}"), null, 2))}</pre>
${variants}
<h2>Publish warnings</h2>${
        warnings.length
          ? `<ul id="warnings">${warnings.map((w) => `<li>${esc(w.rule)} at ${esc(w.pointer)}: ${esc(w.message)}</li>`).join("")}</ul>`
          : `<p id="warnings">None.</p>`
      }${
        approval && blockers.length
          ? `<h2>Would block publishing</h2><ul id="blockers">${blockers.map((b) => `<li>${esc(b.rule)}: ${esc(b.message)}</li>`).join("")}</ul>`
          : ""
      }`,
    };
  }

  // A passport as a person reviews it: where a connector's refusals (connector_writes_drafts_only,
  // variant_review_required) send a person. Its data, variant review and warnings, and what waits for a decision.
  r.get(
    "/organizations/:org/passports/:id",
    wrap(async (req, res) => {
      const person = await personFor(req, res);
      if (!person) return;
      const found = await inEitherMode(person, (ctx) =>
        deps.passport.getPassport({ id: idOf(req) }, { context: ctx }),
      );
      if (!found) return send(res, 404, page("Not found", "<p>No such passport.</p>"));
      const section = await passportSection(found.ctx, idOf(req));
      const waiting = await deps.passport.listReviewItems({}, { context: found.ctx });
      const items = [
        ...waiting.approvals
          .filter((a) => a.passportId === idOf(req))
          .map(
            (a) =>
              `<li><a href="${esc(itemPath(person, "publish-approvals", a.id))}">A connector asked to publish it</a> (${esc(date(a.requestedAt))})</li>`,
          ),
        ...waiting.proposals
          .filter((p) => p.passportId === idOf(req))
          .map(
            (p) =>
              `<li><a href="${esc(itemPath(person, "proposals", p.id))}">A connector proposed a change</a> (${esc(p.state)}, ${esc(date(p.requestedAt))})</li>`,
          ),
      ];
      send(
        res,
        200,
        page(
          "Passport",
          `<p>${found.ctx.livemode ? "Live" : "Test"} mode. Connectors change drafts only: a published passport changes through a proposal a person accepts, or by a person with a secret key.</p>
<h2>Waiting for your decision</h2>${items.length ? `<ul id="waiting">${items.join("")}</ul>` : `<p id="waiting">Nothing.</p>`}
${section.html}`,
        ),
      );
    }),
  );

  // The variant review of a passport (variants-units' review_url): on the passport's page.
  r.get(
    "/organizations/:org/passports/:id/variants/review",
    wrap(async (req, res) => {
      const person = await personFor(req, res);
      if (!person) return;
      res.redirect(
        303,
        `/review/organizations/${encodeURIComponent(person.organization_id)}/passports/${encodeURIComponent(idOf(req))}#variant-review`,
      );
    }),
  );

  r.get(
    "/organizations/:org/publish-approvals/:id",
    wrap(async (req, res) => {
      const person = await personFor(req, res);
      if (!person) return;
      const found = await inEitherMode(person, (ctx) =>
        deps.passport.getPublishApproval({ id: idOf(req) }, { context: ctx }),
      );
      if (!found) return send(res, 404, page("Not found", "<p>No such publish approval.</p>"));
      const a = found.value.approval!;
      const section = await passportSection(found.ctx, a.passportId, {
        variantReviewFingerprint: a.variantReviewFingerprint,
      });
      const decided =
        a.state === "pending"
          ? `<form method="post" action="${esc(itemPath(person, "publish-approvals", idOf(req)))}/decide">${csrfField(person)}
<input type="hidden" name="version" value="${section.passport.version}">
<button name="decision" value="approve">Approve and publish</button>
<button name="decision" value="reject">Reject</button></form>`
          : `<p class="done" id="decision">${esc(a.state)} by ${esc(a.decidedBy ?? "")} at ${esc(date(a.decidedAt))}</p>`;
      send(
        res,
        200,
        page(
          "Publish approval",
          `<p>A connector asked to publish this passport (${found.ctx.livemode ? "live" : "test"} mode) at ${esc(date(a.requestedAt))}. State: <strong id="state">${esc(a.state)}</strong>.</p>
${section.html}${decided}`,
        ),
      );
    }),
  );

  r.post(
    "/organizations/:org/publish-approvals/:id/decide",
    wrap(async (req, res) => {
      const person = await personFor(req, res);
      if (!person) return;
      const body = req.body as Record<string, string>;
      if (!sameToken(body.csrf, person.csrf))
        return send(res, 403, page("Refused", "<p>This form expired; reload the page.</p>"));
      const back = itemPath(person, "publish-approvals", idOf(req));
      try {
        const found = await inEitherMode(person, async (ctx) =>
          deps.passport.decidePublishApproval(
            {
              id: idOf(req),
              approve: body.decision === "approve",
              decidedBy: `person:${person.id}`,
              expectedVersion: body.version ? Number(body.version) : undefined,
            },
            { context: ctx },
          ),
        );
        if (!found) return send(res, 404, page("Not found", "<p>No such publish approval.</p>"));
      } catch (err) {
        if (err instanceof ApiError) return send(res, 409, refusalPage(err, back));
        throw err;
      }
      res.redirect(303, back);
    }),
  );

  r.get(
    "/organizations/:org/proposals/:id",
    wrap(async (req, res) => {
      const person = await personFor(req, res);
      if (!person) return;
      const found = await inEitherMode(person, (ctx) =>
        deps.passport.getProposal({ id: idOf(req) }, { context: ctx }),
      );
      if (!found) return send(res, 404, page("Not found", "<p>No such proposal.</p>"));
      const p = found.value.proposal!;
      const section = await passportSection(found.ctx, p.passportId);
      const form =
        p.state === "pending"
          ? `<form method="post" action="${esc(itemPath(person, "proposals", idOf(req)))}/decide">${csrfField(person)}
<button name="decision" value="accept">Accept the change</button>
<button name="decision" value="reject">Reject</button></form>`
          : `<p class="done" id="decision">${esc(p.state)}${p.decidedAt ? ` at ${esc(date(p.decidedAt))}` : ""}${p.moved.length ? `; moved since: ${esc(p.moved.join(", "))}` : ""}</p>`;
      send(
        res,
        200,
        page(
          "Change proposal",
          `<p>State: <strong id="state">${esc(p.state)}</strong>; expires ${esc(date(p.expiresAt))}.</p>
<h2>Proposed fields</h2><pre id="proposed">${esc(JSON.stringify(JSON.parse(p.fieldsJson), null, 2))}</pre>
${section.html}${form}`,
        ),
      );
    }),
  );

  r.post(
    "/organizations/:org/proposals/:id/decide",
    wrap(async (req, res) => {
      const person = await personFor(req, res);
      if (!person) return;
      const body = req.body as Record<string, string>;
      if (!sameToken(body.csrf, person.csrf))
        return send(res, 403, page("Refused", "<p>This form expired; reload the page.</p>"));
      const back = itemPath(person, "proposals", idOf(req));
      try {
        const found = await inEitherMode(person, (ctx) =>
          deps.passport.decideProposal(
            { id: idOf(req), accept: body.decision === "accept", decidedBy: `person:${person.id}` },
            { context: ctx },
          ),
        );
        if (!found) return send(res, 404, page("Not found", "<p>No such proposal.</p>"));
      } catch (err) {
        if (err instanceof ApiError) return send(res, 409, refusalPage(err, back));
        throw err;
      }
      res.redirect(303, back);
    }),
  );

  return r;
}

/** Too many failed sign-ins from this address: 429 with Retry-After, and when to try again. */
function tooMany(res: express.Response, err: ApiError, next: unknown): void {
  res.set("retry-after", String(err.details.retry_after_seconds));
  send(
    res,
    429,
    page(
      "Sign in to review",
      `<p class="refusal" id="refusal">Too many failed sign-ins from this address; try again in ${esc(err.details.retry_after_seconds)} seconds.</p>
<p><a href="/review/sign-in?next=${encodeURIComponent(safeNext(next))}">Try again</a></p>`,
    ),
  );
}

function refusalPage(err: ApiError, back: string): string {
  return page(
    "Not done",
    `<p class="refusal" id="refusal"><strong>${esc(err.code)}</strong>: ${esc(err.message)}</p>
<pre>${esc(JSON.stringify(err.details, null, 2))}</pre><p><a href="${esc(back)}">Back</a></p>`,
  );
}
