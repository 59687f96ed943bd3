import { createServer, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWebhookSender, unreachedSink } from "../../src/webhooks/sender.js";
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

  it("never connects to 0.0.0.0 or ::, even with private addresses allowed (35 N8)", async () => {
    // A listener on the server's loopback: 0.0.0.0:<its port> would reach it.
    const sockets: Socket[] = [];
    const listener = createServer((s) => sockets.push(s));
    await new Promise<void>((r) => listener.listen(0, "127.0.0.1", r));
    const { port } = listener.address() as { port: number };
    try {
      const send = createWebhookSender({
        rules: { allowLoopback: false, allowPrivateAddresses: true },
        timeoutMs: 1000,
      });
      for (const sink of [
        `https://0.0.0.0:${port}/`,
        `https://0:${port}/`,
        `https://[::]:${port}/`,
      ]) {
        await expect(send({ sink, ...post }), sink).rejects.toThrow(/unspecified/);
      }
      await new Promise((r) => setTimeout(r, 100));
      expect(sockets).toHaveLength(0);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => listener.close(r));
    }
  });

  it("tells a closed port from a silent one apart only while private addresses are refused", async () => {
    // A port that refuses (nothing listens once this closes) and one that never answers.
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const closedPort = (closed.address() as { port: number }).port;
    await new Promise((r) => closed.close(r));
    sink.answer = () => undefined;
    const silent = `https://127.0.0.1:${sink.port}/`;
    const refused = `https://127.0.0.1:${closedPort}/`;
    const errorOf = (rules: { allowLoopback: boolean; allowPrivateAddresses: boolean }) => {
      const send = createWebhookSender({ rules, timeoutMs: 300 });
      return async (sinkUrl: string) =>
        send({ sink: sinkUrl, ...post }).then(
          () => "answered",
          (err: Error) => err.message,
        );
    };
    // Development (loopback only): the causes, for whoever runs the sinks.
    const dev = errorOf({ allowLoopback: true, allowPrivateAddresses: false });
    expect(await dev(refused)).toContain("ECONNREFUSED");
    expect(await dev(silent)).not.toBe(await dev(refused));
    // Private addresses allowed: a scanner learns nothing from the words.
    const inside = errorOf({ allowLoopback: true, allowPrivateAddresses: true });
    expect(await inside(refused)).toBe(unreachedSink);
    expect(await inside(silent)).toBe(unreachedSink);
  });
});
