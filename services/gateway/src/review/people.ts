/**
 * People of an organization and their review-page sessions (docs/decisions/0057). Passwords: scrypt
 * (node:crypto) with a random salt; compared in constant time. A session is a random cookie value of which only
 * its SHA-256 is stored, valid 8 hours, with a CSRF token the page's forms carry.
 */
import { createHash, randomBytes, scrypt as scryptCb, timingSafeEqual } from "node:crypto";
import { promisify } from "node:util";
import type { Kysely } from "kysely";
import { newId } from "@dpp/contract";
import type { GatewayDB } from "../store/schema";

const scrypt = promisify(scryptCb) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;
export const SESSION_LIFETIME_MS = 8 * 3600_000;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, 32);
  return `scrypt$${salt.toString("hex")}$${hash.toString("hex")}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [kind, saltHex, hashHex] = stored.split("$");
  if (kind !== "scrypt" || !saltHex || !hashHex) return false;
  const expected = Buffer.from(hashHex, "hex");
  const actual = await scrypt(password, Buffer.from(saltHex, "hex"), expected.length);
  return timingSafeEqual(actual, expected);
}

const digest = (value: string) => createHash("sha256").update(value).digest("hex");

export interface Person {
  id: string;
  organization_id: string;
  email: string;
  name: string;
}

/** Adds a person to an organization (admin CLI `person:add`). */
export async function addPerson(
  db: Kysely<GatewayDB>,
  p: { organizationId: string; email: string; name: string; password: string },
): Promise<Person> {
  if (p.password.length < 12) throw new Error("the password must be at least 12 characters");
  const row = await db
    .insertInto("person")
    .values({
      id: newId("person"),
      organization_id: p.organizationId,
      email: p.email.trim().toLowerCase(),
      name: p.name,
      password_hash: await hashPassword(p.password),
    })
    .returning(["id", "organization_id", "email", "name"])
    .executeTakeFirstOrThrow();
  return row;
}

/** The person with this email and password, or undefined (the same answer for an unknown email). */
export async function signIn(
  db: Kysely<GatewayDB>,
  email: string,
  password: string,
): Promise<Person | undefined> {
  const row = await db
    .selectFrom("person")
    .selectAll()
    .where("email", "=", email.trim().toLowerCase())
    .executeTakeFirst();
  const ok = await verifyPassword(
    password,
    row?.password_hash ?? `scrypt$${"0".repeat(32)}$${"0".repeat(64)}`,
  );
  return row && ok
    ? { id: row.id, organization_id: row.organization_id, email: row.email, name: row.name }
    : undefined;
}

/** Opens a session: the cookie value (returned once) and its CSRF token. */
export async function openSession(
  db: Kysely<GatewayDB>,
  personId: string,
): Promise<{ cookie: string; csrf: string }> {
  const cookie = randomBytes(32).toString("base64url");
  const csrf = randomBytes(24).toString("base64url");
  await db
    .insertInto("review_session")
    .values({
      digest: digest(cookie),
      person_id: personId,
      csrf_token: csrf,
      expires_at: new Date(Date.now() + SESSION_LIFETIME_MS),
    })
    .execute();
  return { cookie, csrf };
}

export async function sessionPerson(
  db: Kysely<GatewayDB>,
  cookie: string | undefined,
): Promise<(Person & { csrf: string }) | undefined> {
  if (!cookie) return undefined;
  const row = await db
    .selectFrom("review_session as s")
    .innerJoin("person as p", "p.id", "s.person_id")
    .select(["p.id", "p.organization_id", "p.email", "p.name", "s.csrf_token", "s.expires_at"])
    .where("s.digest", "=", digest(cookie))
    .executeTakeFirst();
  if (!row || row.expires_at.getTime() <= Date.now()) return undefined;
  return {
    id: row.id,
    organization_id: row.organization_id,
    email: row.email,
    name: row.name,
    csrf: row.csrf_token,
  };
}

export async function closeSession(db: Kysely<GatewayDB>, cookie: string | undefined): Promise<void> {
  if (cookie) await db.deleteFrom("review_session").where("digest", "=", digest(cookie)).execute();
}
