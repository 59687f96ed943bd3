import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One request a sink received. */
export interface SinkRequest {
  method: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook sink on 127.0.0.1 that records what it receives and answers as told. */
export interface WebhookSink {
  /** http://127.0.0.1:<port>/hook */
  url: string;
  port: number;
  received: SinkRequest[];
  /**
   * How the next requests are answered (default 204): a status, or a function that answers
   * itself (to hang, redirect...). Called with the request's index.
   */
  answer: number | ((res: ServerResponse, index: number) => void);
  /** Resolves once `n` requests have arrived; rejects after `timeoutMs`. */
  waitFor(n: number, timeoutMs?: number): Promise<SinkRequest[]>;
  close(): Promise<void>;
}

/** Start a webhook sink on a free loopback port (or `port`). */
export async function startWebhookSink(port = 0): Promise<WebhookSink> {
  const received: SinkRequest[] = [];
  let waiters: (() => boolean)[] = [];
  const sink: WebhookSink = {
    url: "",
    port: 0,
    received,
    answer: 204,
    waitFor: (n, timeoutMs = 15_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (received.length >= n) {
            clearTimeout(timer);
            resolve(received);
            return true;
          }
          return false;
        };
        const timer = setTimeout(
          () => reject(new Error(`the sink got ${received.length} of ${n} requests`)),
          timeoutMs,
        );
        if (!check()) waiters.push(check);
      }),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const index = received.length;
      received.push({
        method: req.method ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      });
      const answer = sink.answer;
      if (typeof answer === "number") {
        res.statusCode = answer;
        res.end();
      } else answer(res, index);
      waiters = waiters.filter((w) => !w());
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  sink.port = (server.address() as AddressInfo).port;
  sink.url = `http://127.0.0.1:${sink.port}/hook`;
  return sink;
}
