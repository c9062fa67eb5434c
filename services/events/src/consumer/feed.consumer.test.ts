import type { DomainEvent } from "@dpp/contract";
import type { Logger } from "@dpp/kit";
import { createFeedHandler, isRefusedData } from "./feed.consumer";

function fakeLog() {
  const calls = { warn: [] as unknown[][], debug: [] as unknown[][] };
  const log = {
    warn: (...a: unknown[]) => calls.warn.push(a),
    debug: (...a: unknown[]) => calls.debug.push(a),
    child: () => log,
  };
  return { log: log as unknown as Logger, calls };
}

const event = (id: string): DomainEvent => ({
  id,
  type: "passport.created",
  organization_id: "org_1",
  livemode: false,
  created_at: "2026-11-21T10:00:00.000Z",
  related: {},
});
/**
 * A stand-in for the repository's appendBatch, atomic like it: an event that `refuse` throws for fails
 * the whole batch (nothing of it appended). Records the appended events and every call's batch size.
 */
function fakeRepo(refuse: (e: DomainEvent) => Error | undefined = () => undefined) {
  const appended: DomainEvent[] = [];
  const calls: number[] = [];
  return {
    appended,
    calls,
    repo: {
      appendBatch: async (events: readonly DomainEvent[]) => {
        calls.push(events.length);
        for (const e of events) {
          const err = refuse(e);
          if (err) throw err;
        }
        return events.map((e) => {
          appended.push(e);
          return { status: "appended" as const, sequence: appended.length };
        });
      },
    },
  };
}

const msg = (value: unknown) => ({
  key: "org_1",
  value: typeof value === "string" ? value : JSON.stringify(value),
});

describe("createFeedHandler", () => {
  it("appends valid events in order, in one call for the batch, and logs and skips malformed ones", async () => {
    const fake = fakeRepo();
    const { log, calls } = fakeLog();
    const handler = createFeedHandler(fake.repo, log);
    await handler([
      msg(event("evt_1")),
      msg("nope"),
      msg({ ...event("evt_x"), livemode: 1 }),
      msg(event("evt_2")),
    ]);
    expect(fake.appended.map((e) => e.id)).toEqual(["evt_1", "evt_2"]);
    expect(fake.calls).toEqual([2]);
    expect(calls.warn).toHaveLength(2);
    expect(calls.warn[0]![0]).toMatchObject({ reason: "not_json", key: "org_1" });
  });

  it("skips an event the database refuses as data (SQLSTATE class 22), appending the rest of its batch one by one", async () => {
    const fake = fakeRepo((e) =>
      e.id === "evt_bad"
        ? Object.assign(new Error("unsupported Unicode escape sequence"), { code: "22P05" })
        : undefined,
    );
    const { log, calls } = fakeLog();
    const handler = createFeedHandler(fake.repo, log);
    await handler([msg(event("evt_a")), msg(event("evt_bad")), msg(event("evt_ok"))]);
    expect(fake.appended.map((e) => e.id)).toEqual(["evt_a", "evt_ok"]);
    expect(fake.calls).toEqual([3, 1, 1, 1]);
    expect(calls.warn).toHaveLength(1);
    expect(calls.warn[0]![0]).toMatchObject({ event_id: "evt_bad" });
  });

  it("accepts a well-formed type missing from the catalogue and warns once per type", async () => {
    const fake = fakeRepo();
    const { log, calls } = fakeLog();
    const handler = createFeedHandler(fake.repo, log);
    await handler([
      msg({ ...event("evt_a"), type: "widget.spun" }),
      msg({ ...event("evt_b"), type: "widget.spun" }),
      msg(event("evt_c")),
    ]);
    expect(fake.appended.map((e) => e.type)).toEqual(["widget.spun", "widget.spun", "passport.created"]);
    expect(calls.warn).toHaveLength(1);
    expect(calls.warn[0]![0]).toMatchObject({ type: "widget.spun" });
  });

  it("rethrows other failures so the bus redelivers the batch", async () => {
    const { log } = fakeLog();
    const fake = fakeRepo(() => Object.assign(new Error("connection terminated"), { code: "57P01" }));
    const handler = createFeedHandler(fake.repo, log);
    await expect(handler([msg(event("evt_1"))])).rejects.toThrow("connection terminated");
  });
});

describe("isRefusedData", () => {
  it("is true only for SQLSTATE class 22", () => {
    expect(isRefusedData({ code: "22008" })).toBe(true);
    expect(isRefusedData({ code: "22P05" })).toBe(true);
    expect(isRefusedData({ code: "23505" })).toBe(false);
    expect(isRefusedData({ code: "08006" })).toBe(false);
    expect(isRefusedData(new Error("x"))).toBe(false);
    expect(isRefusedData(null)).toBe(false);
  });
});
