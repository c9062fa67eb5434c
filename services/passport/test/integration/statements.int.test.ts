/**
 * The statements each call sends to Postgres, and in how many round trips: round trips are most of a call's
 * cost, so the messages of each path are pinned here and a change to them is seen.
 *
 * Every query the service's pool sends (application_name "passport") is recorded at the node-postgres
 * client: one query is one message, one round trip (a message of several statements, as the kit sends around
 * a call under an Idempotency-Key, is one entry, its statements joined by " + "). The outbox relay is stopped
 * so that only the call's own statements are sent meanwhile.
 */
import { randomBytes } from "node:crypto";
import { type RequestContext } from "@dpp/kit";
import { watchStatements } from "@dpp/kit/testing";
import {
  context,
  createRequest,
  randomGtin13,
  startHarness,
  testTenant,
  type Harness,
  publishableTextile,
} from "../harness";

let h: Harness;
let recording: string[] | undefined;
/** The text of each prepared statement by name, for a message that runs one as `execute <name>(...)`. */
const preparedTexts = new Map<string, string>();
/** Session locks released by the service's leader jobs (the retention sweep, the idempotency reaper). */
let jobPassesEnded = 0;
let restoreQuery: () => void = () => undefined;

beforeAll(async () => {
  restoreQuery = watchStatements("passport", (text, _client, name) => {
    if (name !== undefined) preparedTexts.set(name, text);
    if (text.includes("pg_advisory_unlock")) jobPassesEnded++;
    recording?.push(text);
  });
  h = await startHarness("passport_statements");
  await h.service.relay?.stop();
  // The two leader jobs make their first pass at start (the next one an interval later): none may run meanwhile.
  for (let waited = 0; jobPassesEnded < 2 && waited < 30_000; waited += 20)
    await new Promise((r) => setTimeout(r, 20));
});

afterAll(async () => {
  restoreQuery();
  await h?.close();
});

/** What a message does: its statements' kinds (`statementKind`), joined by " + ". */
function kind(text: string): string {
  return text
    .split(/;\s*\n/)
    .map(statementKind)
    .join(" + ");
}

/**
 * What a statement does, in a word or two: "begin", "insert passport", "outbox", ... A write that records its
 * event in the same statement (a CTE `written` and the outbox insert) is "<write> + event".
 */
function statementKind(text: string): string {
  const s = text.replace(/\s+/g, " ").replace(/"/g, "").trim().toLowerCase();
  const executed = /^execute (kit_\d+_\d+)\(/.exec(s);
  if (executed) return statementKind(preparedTexts.get(executed[1]!) ?? `unknown prepared ${executed[1]}`);
  if (s.startsWith("prepare kit_idem_")) return "prepare key statement";
  if (s.startsWith("execute kit_idem_claim(")) return "claim key";
  if (/^(savepoint|release savepoint|rollback to savepoint) /.test(s)) return s.replace(/ \w+$/, "");
  if (/^(begin|commit|rollback)\b/.test(s)) return s.split(" ")[0]!;
  // The call's deadline bounding its waits, sent with begin (the kit's deadline.ts).
  if (/^set local (lock|statement)_timeout = \d+$/.test(s)) return s.split(" ")[2]!;
  const written = /^with written as \( ?(insert into|update) (\w+)/.exec(s);
  if (written && s.includes("insert into outbox"))
    return `${written[1] === "update" ? "update" : "insert"} ${written[2]} + event`;
  if (s.includes("outbox")) return "outbox";
  if (s.startsWith("execute kit_idem_open(")) return "lock and read key";
  if (s.startsWith("execute kit_idem_record(")) return "record key";
  const m = /^(?:(insert) into|(update)|(delete) from|(select) .*? from) (\w+)/.exec(s);
  if (m) return `${m.slice(1, 5).find(Boolean)} ${m[5]}${s.includes(" for update") ? " for update" : ""}`;
  if (s.includes("pg_advisory_xact_lock")) return "advisory lock";
  return s.slice(0, 40);
}

/** The message that prepares the kit's three key statements on a connection, before its first keyed call. */
const PREPARE_KEY_STATEMENTS = "prepare key statement + prepare key statement + prepare key statement";

/**
 * The messages the service sent while `call` ran, by kind (the answer leaves after the commit). The preparation of
 * the key's statements is left out: it comes once per connection of the pool, whichever call first used it.
 */
async function statementsOf(call: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  recording = sent;
  try {
    await call();
  } finally {
    recording = undefined;
  }
  return sent.map(kind).filter((k) => k !== PREPARE_KEY_STATEMENTS);
}

const key = (ctx: RequestContext): RequestContext => ({
  ...ctx,
  idempotency: {
    key: `k-${randomBytes(6).toString("hex")}`,
    fingerprint: randomBytes(32).toString("hex"),
    callerOrganizationId: ctx.organizationId!,
  },
});

const PRO = { planId: "pro", subscriptionStatus: "active", publishLimit: 1000 };
const complete = publishableTextile();

const shirt = (name: string) => createRequest({ category: "textile", data: { product_name: name } });

describe("statements per call", () => {
  const t = testTenant();

  beforeAll(async () => {
    // The pool's connections are open and every query path has run once.
    await h.create(t, { category: "textile", data: { product_name: "Warm-up" } });
  });

  it("a create without an Idempotency-Key: one statement, the passport and its event, no begin or commit", async () => {
    const sent = await statementsOf(() => h.client.createPassport(shirt("A"), { context: context(t) }));
    expect(sent).toEqual(["insert passport + event"]);
  });

  it("a create under a new Idempotency-Key: two round trips, begin and the key's claim with the write, the record with commit", async () => {
    const sent = await statementsOf(() => h.client.createPassport(shirt("B"), { context: key(context(t)) }));
    expect(sent).toEqual([
      "begin + lock_timeout + statement_timeout + claim key + insert passport + event",
      "record key + commit",
    ]);
  });

  it("a retry under the same key: the claim fails the write, then the recorded answer is read and replayed", async () => {
    const ctx = key(context(t));
    await h.client.createPassport(shirt("C"), { context: ctx });
    const retry: RequestContext = { ...ctx, requestId: `req_${randomBytes(6).toString("hex")}` };
    const sent = await statementsOf(() => h.client.createPassport(shirt("C"), { context: retry }));
    expect(retry.outcome?.idempotentReplayed).toBe(true);
    expect(sent).toEqual([
      "begin + lock_timeout + statement_timeout + claim key + insert passport + event",
      "rollback",
      "begin + lock_timeout + statement_timeout + lock and read key",
      "commit",
    ]);
  });

  it("a create with a GTIN also claims it, in the same transaction", async () => {
    const req = createRequest({ category: "textile", data: { product_name: "D", gtin: randomGtin13() } });
    const sent = await statementsOf(() => h.client.createPassport(req, { context: context(t) }));
    expect(sent).toEqual([
      "begin + lock_timeout + statement_timeout",
      "insert passport + event",
      "insert gtin_claim",
      "commit",
    ]);
  });

  it("a refusal under a key after the write (external_id taken): the call again, with a savepoint to roll back to", async () => {
    await h.client.createPassport(
      createRequest({ category: "textile", external_id: "stmt-taken", data: { product_name: "I" } }),
      { context: context(t) },
    );
    const taken = createRequest({
      category: "textile",
      external_id: "stmt-taken",
      data: { product_name: "J" },
    });
    const sent = await statementsOf(() =>
      h.client.createPassport(taken, { context: key(context(t)) }).catch((err: unknown) => err),
    );
    expect(sent).toEqual([
      "begin + lock_timeout + statement_timeout + claim key + insert passport + event",
      "select passport",
      "rollback",
      "begin + lock_timeout + statement_timeout + lock and read key + savepoint",
      "insert passport + event",
      "select passport",
      "rollback to savepoint + record key + commit",
    ]);
  });

  it("a GET of one passport: one statement", async () => {
    const p = await h.create(t, { category: "textile", data: { product_name: "E" } });
    const sent = await statementsOf(() => h.client.getPassport({ id: p.id }, { context: context(t) }));
    expect(sent).toEqual(["select passport"]);
  });

  it("a page of the list: one statement", async () => {
    const sent = await statementsOf(() => h.list(t, { limit: 10 }));
    expect(sent).toEqual(["select passport"]);
  });

  it("a PATCH: the row locked and read, the versioned update with its event", async () => {
    const p = await h.create(t, { category: "textile", data: { product_name: "F" } });
    const patch = { id: p.id, patchJson: JSON.stringify({ data: { product_name: "G" } }) };
    const plain = await statementsOf(() => h.client.updatePassport(patch, { context: context(t) }));
    expect(plain).toEqual([
      "begin + lock_timeout + statement_timeout",
      "select passport for update",
      "update passport + event",
      "commit",
    ]);
    const keyed = await statementsOf(() =>
      h.client.updatePassport(
        { ...patch, patchJson: JSON.stringify({ data: { product_name: "H" } }) },
        { context: key(context(t)) },
      ),
    );
    expect(keyed).toEqual([
      "begin + lock_timeout + statement_timeout + claim key + select passport for update",
      "update passport + event",
      "record key + commit",
    ]);
  });

  it("a publish: the row, the GTIN's holder, the tenant's publish slots, the versioned update with its event", async () => {
    const c = { ...context(t), credentialKind: "secret" as const, plan: PRO };
    const p = await h.create(t, { category: "textile", data: complete });
    const sent = await statementsOf(() => h.client.publishPassport({ id: p.id }, { context: c }));
    expect(sent).toEqual([
      "begin + lock_timeout + statement_timeout",
      "select passport for update",
      "select gtin_claim",
      "insert gtin_claim",
      "select gtin_claim",
      "update passport + event",
      "select publish_slot_usage",
      "commit",
    ]);
  });
});
