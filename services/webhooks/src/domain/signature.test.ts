import { createHmac } from "node:crypto";
import { deliveryBody, newSecret, sign, signatureHeader } from "./signature";
import { afterFailure, retryDelayMs } from "./retry";

it("signs id.timestamp.body with the secret's key bytes, as the Standard Webhooks spec does", () => {
  // The specification's example.
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const body = '{"test": 2432232314}';
  expect(sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)).toBe(
    "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
  );
  const other = newSecret();
  expect(signatureHeader([secret, other], "msg_1", 1, body).split(" ")).toEqual([
    sign(secret, "msg_1", 1, body),
    "v1," +
      createHmac("sha256", Buffer.from(other.slice(6), "base64"))
        .update(`msg_1.1.${body}`)
        .digest("base64"),
  ]);
});

it("adds the cursor to the event's object text", () => {
  expect(deliveryBody('{"id":"evt_1","related":{"a":1}}', "c1")).toBe(
    '{"id":"evt_1","related":{"a":1},"next_cursor":"c1"}',
  );
  expect(deliveryBody("{}", null)).toBe('{"next_cursor":null}');
  expect(() => deliveryBody("[1]", "c")).toThrow();
});

it("backs off exponentially with jitter, and disables on 410 or after failing for too long", () => {
  const p = { baseMs: 1000, maxMs: 60_000, disableAfterMs: 3_600_000 };
  expect(retryDelayMs(p, 1, () => 0)).toBe(500);
  expect(retryDelayMs(p, 1, () => 1)).toBe(1000);
  expect(retryDelayMs(p, 4, () => 1)).toBe(8000);
  expect(retryDelayMs(p, 30, () => 1)).toBe(60_000);
  const now = new Date("2026-01-01T00:00:00Z");
  expect(afterFailure(p, { status: 410, failingSince: null, failures: 1, now })).toEqual({ disable: "gone" });
  expect(
    afterFailure(p, { status: 500, failingSince: new Date(now.getTime() - 3_600_000), failures: 9, now }),
  ).toEqual({ disable: "failing" });
  const r = afterFailure(p, { status: 500, failingSince: null, failures: 1, now });
  expect("retryAt" in r && r.retryAt.getTime() - now.getTime()).toBeGreaterThanOrEqual(500);
});
