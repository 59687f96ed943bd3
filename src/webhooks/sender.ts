import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { RefusedSinkAddressError, type SinkRules, sinkLookup, sinkProblem } from "./sink-rules.js";

/** The most bytes of a sink's answer read: its status is what counts; the rest is dropped. */
export const maxAnswerBytes = 64 * 1024;

/** Options of createWebhookSender. */
export interface SenderOptions {
  rules: SinkRules;
  /** The longest one attempt may take, connection to end of the answer. */
  timeoutMs: number;
  /** The most answer bytes read; default maxAnswerBytes. */
  maxBytes?: number;
}

/** One POST to a sink. */
export interface WebhookRequest {
  sink: string;
  body: string;
  headers: Record<string, string>;
}

/** A sink's answer: its status (any, redirects included: none is followed). */
export interface WebhookAnswer {
  status: number;
}

/** Sends webhook requests under the sink rules. */
export type WebhookSender = (req: WebhookRequest) => Promise<WebhookAnswer>;

/**
 * Create the sender of deliveries: one POST, the sink's rules checked again (settings may
 * have changed since the subscription was made) and its name resolved and pinned to allowed
 * addresses, no redirect followed (a 3xx is a failed attempt), at most `maxBytes` of the
 * answer read, everything within `timeoutMs`. No connection is reused (no agent): a sink
 * never holds a socket between deliveries.
 */
export function createWebhookSender(opts: SenderOptions): WebhookSender {
  const maxBytes = opts.maxBytes ?? maxAnswerBytes;
  const lookup = sinkLookup(opts.rules);
  return (w) =>
    new Promise<WebhookAnswer>((resolve, reject) => {
      const problem = sinkProblem(w.sink, opts.rules);
      if (problem) return reject(new RefusedSinkAddressError(`the sink ${problem}`));
      const target = new URL(w.sink);
      const send = target.protocol === "https:" ? httpsRequest : httpRequest;
      let settled = false;
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        fn();
      };
      const req = send(
        target,
        {
          method: "POST",
          agent: false,
          lookup,
          headers: { ...w.headers, "content-length": Buffer.byteLength(w.body) },
        },
        (res) => {
          const status = res.statusCode ?? 0;
          let size = 0;
          res.on("data", (chunk: Buffer) => {
            size += chunk.length;
            // Enough read: the status is known, the rest of a large answer is not wanted.
            if (size > maxBytes) {
              settle(() => resolve({ status }));
              res.destroy();
            }
          });
          res.on("end", () => settle(() => resolve({ status })));
          res.on("error", (err) => settle(() => reject(err)));
          res.on("aborted", () => settle(() => resolve({ status })));
        },
      );
      const timer = setTimeout(() => {
        settle(() => reject(new Error(`no answer within ${opts.timeoutMs} ms`)));
        req.destroy();
      }, opts.timeoutMs);
      timer.unref();
      req.on("error", (err) => settle(() => reject(err)));
      req.end(w.body);
    });
}
