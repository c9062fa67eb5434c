/**
 * The review page's sign-in (src/review/page.ts) against guessing: failed sign-ins count against the client
 * address in the failed-authentication bucket (RATE_LIMIT_AUTH_FAILURES_PER_MINUTE, its own counter beside the
 * API's); over the limit, sign-in answers 429 with Retry-After before the password is checked, so a right guess
 * looks like a wrong one. The gateway runs on its own store with its in-process limiter (no Redis).
 */
import { randomUUID } from "node:crypto";
import { startServiceUnderTest, type UnderTest } from "@dpp/kit/testing";
import { gatewayService } from "../../src/gateway";
import { addPerson } from "../../src/review/people";
import { Admin } from "../../src/modules/identity/admin";
import { IdentityRepository } from "../../src/modules/identity/identity.repository";

const LIMIT = 3;
let gw: UnderTest<typeof gatewayService>;
let base: string;
const password = "correct horse battery";

beforeAll(async () => {
  gw = await startServiceUnderTest(
    gatewayService,
    {
      HTTP_HOST: "127.0.0.1",
      HTTP_PORT: "0",
      REDIS_URL: "",
      RATE_LIMIT_KEY_PREFIX: `review-sign-in-${randomUUID()}`,
      RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: String(LIMIT),
    },
    "gw_review_sign_in",
  );
  base = `http://127.0.0.1:${gw.extra.port}`;
  const org = await new Admin(new IdentityRepository(gw.db)).createOrganization("Acme", "pro", "active");
  await addPerson(gw.db, {
    organizationId: org.id,
    email: "camille@acme.example",
    name: "Camille",
    password,
  });
});
afterAll(async () => {
  await gw?.close();
});

const signIn = (pw: string) =>
  fetch(`${base}/review/sign-in`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ email: "camille@acme.example", password: pw, next: "/review" }).toString(),
    redirect: "manual",
  });

it("signs in with the password, refuses a wrong one, and refuses every attempt once too many failed", async () => {
  const ok = await signIn(password);
  expect(ok.status).toBe(303);
  expect(ok.headers.get("set-cookie")).toMatch(/^dpp_review=[^;]+; HttpOnly; SameSite=Strict; Path=\/review/);

  for (let i = 0; i < LIMIT; i++) expect((await signIn(`wrong ${i}`)).status).toBe(401);
  // The limit's failures used: the next attempt is answered 429.
  const next = await signIn("wrong again");
  expect(next.status).toBe(429);
  expect(Number(next.headers.get("retry-after"))).toBeGreaterThan(0);
  expect(await next.text()).toContain("Too many failed sign-ins");

  // Over the limit, the right password is refused the same way: the attempt is not even checked.
  const right = await signIn(password);
  expect(right.status).toBe(429);
  expect(right.headers.get("set-cookie")).toBeNull();
});
