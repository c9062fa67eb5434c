/** verifyWebhook follows the Standard Webhooks specification: its own example verifies, anything else does not. */
import { verifyWebhook, WebhookVerificationError } from "../src";

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const body = '{"test": 2432232314}';
const headers = {
  "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
  "webhook-timestamp": "1614265330",
  "webhook-signature":
    "v1,bm9ldHUjKzFob2VudXRob2VodWUzMjRvdWVvdW9ldQo= v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const now = new Date(1614265330 * 1000 + 60_000);

it("verifies the specification's example, with one of several signatures matching", async () => {
  const v = await verifyWebhook(body, headers, secret, { now });
  expect(v.webhookId).toBe("msg_p5jXN8AQM9LWM0D4loKWxJek");
  expect(v.event).toEqual({ test: 2432232314 });
});

it("refuses a changed body, a stale timestamp, another secret and a missing header", async () => {
  await expect(verifyWebhook(body + " ", headers, secret, { now })).rejects.toThrow(WebhookVerificationError);
  await expect(
    verifyWebhook(body, headers, secret, { now: new Date(now.getTime() + 3_600_000) }),
  ).rejects.toThrow(/timestamp/);
  await expect(
    verifyWebhook(body, headers, "whsec_" + Buffer.from("another key").toString("base64"), { now }),
  ).rejects.toThrow(/signature/);
  await expect(verifyWebhook(body, { ...headers, "webhook-id": undefined }, secret, { now })).rejects.toThrow(
    /webhook-id/,
  );
});
