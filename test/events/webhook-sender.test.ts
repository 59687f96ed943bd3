import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWebhookSender } from "../../src/webhooks/sender.js";
import { startWebhookSink, type WebhookSink } from "../helpers/webhook-sink.js";

// The sender against real sinks on 127.0.0.1: the rules are checked again at delivery, the
// answer is read up to a cap, and an attempt ends within its timeout.

describe("webhook sender", () => {
  let sink: WebhookSink;
  beforeAll(async () => {
    sink = await startWebhookSink();
  });
  afterAll(() => sink?.close());

  const post = { body: "{}", headers: { "content-type": "application/cloudevents+json" } };

  it("refuses at delivery a sink the rules no longer allow, without connecting", async () => {
    const send = createWebhookSender({
      rules: { allowLoopback: false, allowPrivateAddresses: false },
      timeoutMs: 2000,
    });
    const before = sink.received.length;
    await expect(send({ sink: sink.url, ...post })).rejects.toThrow(/loopback/);
    expect(sink.received).toHaveLength(before);
  });

  it("reads a huge answer only up to the cap, and answers its status", async () => {
    sink.answer = (res) => {
      res.statusCode = 200;
      // 8 MiB, more than the cap many times over; the sender stops reading early.
      const chunk = Buffer.alloc(64 * 1024, 97);
      let left = 128;
      const write = () => {
        while (left > 0) {
          left--;
          if (!res.write(chunk)) return void res.once("drain", write);
        }
        res.end();
      };
      res.on("error", () => undefined);
      write();
    };
    const send = createWebhookSender({
      rules: { allowLoopback: true, allowPrivateAddresses: false },
      timeoutMs: 5000,
      maxBytes: 1024,
    });
    await expect(send({ sink: sink.url, ...post })).resolves.toEqual({ status: 200 });
  });

  it("gives up on a sink that never answers, within the timeout", async () => {
    sink.answer = () => undefined; // never answers
    const send = createWebhookSender({
      rules: { allowLoopback: true, allowPrivateAddresses: false },
      timeoutMs: 300,
    });
    await expect(send({ sink: sink.url, ...post })).rejects.toThrow("no answer within 300 ms");
  });
});
