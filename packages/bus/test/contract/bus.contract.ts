/**
 * The contract of the Bus interface: every adapter must pass it.
 *   - messages of one key arrive in publish order (per-key order is all Kafka
 *     promises across partitions; the Postgres transport gives a total order);
 *   - key, value and headers arrive unchanged;
 *   - a new group starts at the beginning of the topic;
 *   - a group's position advances only after its handler returned: a throwing
 *     handler gets the same messages again, nothing accepted comes again;
 *   - every group gets every message; subscribers sharing a group share the
 *     messages without duplicates;
 *   - a stopped subscription receives nothing; a new one resumes where the
 *     group left off.
 * Run by test/integration/bus.contract.int.test.ts for each available adapter.
 */
import { randomBytes } from "node:crypto";
import type { Bus, BusMessage, Subscription } from "../../src/bus";
import { eventually } from "@dpp/kit/testing";

export interface ContractTarget {
  /** A new bus instance (each test may open several, as separate replicas would). */
  bus(): Promise<Bus> | Bus;
  /** Upper bound for one delivery to show up (a Kafka group join takes seconds). */
  deliveryTimeoutMs: number;
  /** A short wait after which an undelivered message counts as "not delivered". */
  quietMs: number;
  /** Time jest gives one test (several deliveries and group joins); default 3 × deliveryTimeoutMs. */
  testTimeoutMs?: number;
  /** Tests this target cannot serve, by name, with the reason: reported as skipped, by name. */
  skip?: Record<string, string>;
}

const uniq = (label: string) => `contract-${label}-${randomBytes(4).toString("hex")}`;

const msgs = (prefix: string, from: number, to: number, key = "org_1"): BusMessage[] =>
  Array.from({ length: to - from + 1 }, (_, i) => ({ key, value: `${prefix}-${from + i}` }));

const values = (l: BusMessage[]) => l.map((m) => m.value);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The names of the contract's tests (for ContractTarget.skip). */
export const BUS_CONTRACT_TESTS: string[] = [];

export function describeBusContract(name: string, target: ContractTarget): void {
  const timeout = target.testTimeoutMs ?? 3 * target.deliveryTimeoutMs;
  const it = (title: string, fn: () => Promise<void>) => {
    if (!BUS_CONTRACT_TESTS.includes(title)) BUS_CONTRACT_TESTS.push(title);
    const reason = target.skip?.[title];
    if (reason) test.skip(`${title} [not served by ${name}: ${reason}]`, fn);
    else test(title, fn, timeout);
  };
  describe(`Bus contract: ${name}`, () => {
    const opened: Bus[] = [];
    const subs: Subscription[] = [];

    const bus = async (): Promise<Bus> => {
      const b = await target.bus();
      opened.push(b);
      return b;
    };

    async function collect(b: Bus, topic: string, group: string) {
      const got: BusMessage[] = [];
      const sub = await b.subscribe({ group, topic, handler: async (batch) => void got.push(...batch) });
      subs.push(sub);
      return { got, sub };
    }

    const waitFor = (got: unknown[], n: number) =>
      eventually(async () => (got.length >= n ? true : undefined), target.deliveryTimeoutMs);

    // Each test's buses are closed after it: they hold database connections (Postgres transport).
    afterEach(async () => {
      await Promise.all(subs.splice(0).map((s) => s.stop().catch(() => undefined)));
      await Promise.all(opened.splice(0).map((b) => b.close()));
    });

    it("delivers one key's messages in publish order, with key, value and headers unchanged", async () => {
      const b = await bus();
      const topic = uniq("order");
      const { got } = await collect(b, topic, "g-order");
      await b.publish(topic, [
        { key: "org_a", value: "first", headers: { "content-type": "application/json", "x-n": "1" } },
      ]);
      await b.publish(topic, msgs("m", 2, 6, "org_a"));
      await b.publish(topic, []);
      await b.publish(topic, msgs("m", 7, 10, "org_a"));
      await waitFor(got, 10);
      expect(got[0]).toEqual({
        key: "org_a",
        value: "first",
        headers: { "content-type": "application/json", "x-n": "1" },
      });
      expect(values(got.slice(1))).toEqual(values(msgs("m", 2, 10)));
      expect(got.every((m) => m.key === "org_a")).toBe(true);
    });

    it("keeps each key's order when keys are interleaved", async () => {
      const b = await bus();
      const topic = uniq("keys");
      const { got } = await collect(b, topic, "g-keys");
      const keys = ["org_a", "org_b", "org_c", "org_d"];
      for (let round = 0; round < 5; round++)
        await b.publish(
          topic,
          keys.map((k) => ({ key: k, value: `${k}-${round}` })),
        );
      await waitFor(got, 20);
      await sleep(target.quietMs);
      expect(got).toHaveLength(20);
      for (const k of keys)
        expect(values(got.filter((m) => m.key === k))).toEqual([0, 1, 2, 3, 4].map((r) => `${k}-${r}`));
    });

    it("delivers what was published before the subscriber started (a new group starts at the beginning)", async () => {
      const b = await bus();
      const topic = uniq("backlog");
      await b.publish(topic, msgs("old", 1, 5));
      const { got } = await collect(b, topic, "g-late");
      await waitFor(got, 5);
      expect(values(got)).toEqual(values(msgs("old", 1, 5)));
    });

    it("does not deliver another topic's messages", async () => {
      const b = await bus();
      const topic = uniq("mine");
      const { got } = await collect(b, topic, "g-topic");
      await b.publish(uniq("other"), msgs("other", 1, 3));
      await b.publish(topic, msgs("mine", 1, 2));
      await waitFor(got, 2);
      await sleep(target.quietMs);
      expect(values(got)).toEqual(["mine-1", "mine-2"]);
    });

    it("redelivers messages whose handler threw, and never again once the handler succeeded", async () => {
      const b = await bus();
      const topic = uniq("retry");
      await b.publish(topic, msgs("r", 1, 4));
      let accept = false;
      const attempts: string[][] = [];
      const accepted: string[] = [];
      subs.push(
        await b.subscribe({
          group: "g-retry",
          topic,
          handler: async (batch) => {
            attempts.push(values(batch));
            if (!accept) throw new Error("handler not ready");
            accepted.push(...values(batch));
          },
        }),
      );
      await waitFor(attempts, 3);
      // Every failed attempt started again from the first message.
      for (const a of attempts.slice(0, 3)) expect(a[0]).toBe("r-1");
      expect(accepted).toEqual([]);
      accept = true;
      await waitFor(accepted, 4);
      expect(accepted).toEqual(["r-1", "r-2", "r-3", "r-4"]);
      await b.publish(topic, msgs("r", 5, 6));
      await waitFor(accepted, 6);
      await sleep(target.quietMs);
      expect(accepted).toEqual(["r-1", "r-2", "r-3", "r-4", "r-5", "r-6"]);
    });

    it("resumes a group after a failed handler from the first unaccepted message, on a new subscriber", async () => {
      const topic = uniq("takeover");
      const first = await bus();
      await first.publish(topic, msgs("t", 1, 3));
      const accepted: string[] = [];
      const sub1 = await first.subscribe({
        group: "g-takeover",
        topic,
        handler: async (batch) => {
          accepted.push(...values(batch));
        },
      });
      await waitFor(accepted, 3);
      await sub1.stop();
      // Published while no subscriber runs; the failing subscriber accepts nothing.
      await first.publish(topic, msgs("t", 4, 6));
      const failing = await (
        await bus()
      ).subscribe({
        group: "g-takeover",
        topic,
        handler: async () => {
          throw new Error("down");
        },
      });
      await sleep(target.quietMs);
      await failing.stop();
      const second = await collect(await bus(), topic, "g-takeover");
      await waitFor(second.got, 3);
      await sleep(target.quietMs);
      expect(values(second.got)).toEqual(["t-4", "t-5", "t-6"]);
    });

    it("gives each consumer group every message", async () => {
      const b = await bus();
      const topic = uniq("groups");
      const one = await collect(b, topic, "g-one");
      const two = await collect(await bus(), topic, "g-two");
      await b.publish(topic, msgs("x", 1, 20));
      await waitFor(one.got, 20);
      await waitFor(two.got, 20);
      expect(values(one.got)).toEqual(values(msgs("x", 1, 20)));
      expect(values(two.got)).toEqual(values(msgs("x", 1, 20)));
    });

    it("shares a group's messages between two subscribers of that group without duplicates or per-key reordering", async () => {
      const topic = uniq("shared");
      const a = await collect(await bus(), topic, "g-shared");
      const c = await collect(await bus(), topic, "g-shared");
      const pub = await bus();
      for (let i = 1; i <= 5; i++) await pub.publish(topic, msgs(`s${i}`, 1, 10, `org_${i}`));
      await eventually(
        async () => (a.got.length + c.got.length >= 50 ? true : undefined),
        target.deliveryTimeoutMs,
      );
      await sleep(target.quietMs);
      const all = values([...a.got, ...c.got]);
      expect(all).toHaveLength(50);
      expect(new Set(all).size).toBe(50);
      for (const side of [a.got, c.got])
        for (let i = 1; i <= 5; i++) {
          const mine = values(side.filter((m) => m.key === `org_${i}`));
          expect(mine).toEqual([...mine].sort((x, y) => Number(x.split("-")[1]) - Number(y.split("-")[1])));
        }
    });

    it("delivers concurrent publishers' messages exactly once, each key in its publish order", async () => {
      const topic = uniq("concurrent");
      const { got } = await collect(await bus(), topic, "g-concurrent");
      const publishers = await Promise.all([bus(), bus(), bus()]);
      const PUBLISHERS = 9;
      const EACH = 30;
      await Promise.all(
        Array.from({ length: PUBLISHERS }, async (_, p) => {
          const b = publishers[p % publishers.length]!;
          for (let i = 0; i < EACH; i++) await b.publish(topic, [{ key: `org_${p}`, value: `p${p}-${i}` }]);
        }),
      );
      await waitFor(got, PUBLISHERS * EACH);
      await sleep(target.quietMs);
      const all = values(got);
      expect(all).toHaveLength(PUBLISHERS * EACH);
      expect(new Set(all).size).toBe(PUBLISHERS * EACH);
      for (let p = 0; p < PUBLISHERS; p++)
        expect(all.filter((v) => v.startsWith(`p${p}-`))).toEqual(
          Array.from({ length: EACH }, (_, i) => `p${p}-${i}`),
        );
    });

    it("reports a subscription running once it consumes, and forgets it once stopped", async () => {
      const b = await bus();
      const topic = uniq("status");
      const { got, sub } = await collect(b, topic, "g-status");
      await b.publish(topic, msgs("st", 1, 1));
      await waitFor(got, 1);
      await eventually(
        async () => (sub.status().state === "running" ? true : undefined),
        target.deliveryTimeoutMs,
      );
      expect(b.status().subscriptions).toContainEqual(
        expect.objectContaining({ group: "g-status", topic, state: "running" }),
      );
      expect(b.status().publish.failing).toBe(false);
      await sub.stop();
      expect(b.status().subscriptions.some((s) => s.group === "g-status")).toBe(false);
    });

    it("stops delivering after the subscription stops, and resumes where the group left off", async () => {
      const b = await bus();
      const topic = uniq("resume");
      const first = await collect(b, topic, "g-resume");
      await b.publish(topic, msgs("a", 1, 3));
      await waitFor(first.got, 3);
      await first.sub.stop();
      await b.publish(topic, msgs("a", 4, 6));
      await sleep(target.quietMs);
      expect(first.got).toHaveLength(3);
      const second = await collect(b, topic, "g-resume");
      await waitFor(second.got, 3);
      await sleep(target.quietMs);
      expect(values(second.got)).toEqual(["a-4", "a-5", "a-6"]);
    });
  });
}
