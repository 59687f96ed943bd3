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
 * What an attempt without an HTTP answer says while private sink addresses are allowed: the
 * same words for a refused connection, a reset, a TLS failure and a timeout, so that a
 * subscription's lastError cannot map which ports of the inside network are open (issue 35
 * N8). The timing still differs (a refusal fails at once): docs/events.md "SSRF rules".
 */
export const unreachedSink =
  "the sink could not be reached or gave no answer (the cause is not shown while private sink addresses are allowed)";

// Errors that tell nothing of a port: a name that does not resolve, an address refused here.
const portBlind = new Set(["ENOTFOUND", "EAI_AGAIN", "EREFUSEDSINKADDRESS"]);

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
  const send = sendOnce(opts, maxBytes, lookup);
  if (!opts.rules.allowPrivateAddresses) return send;
  return (w) =>
    send(w).catch((err: unknown) => {
      const code = (err as { code?: unknown }).code;
      throw typeof code === "string" && portBlind.has(code) ? err : new Error(unreachedSink);
    });
}

// One POST, its errors as they are.
function sendOnce(
  opts: SenderOptions,
  maxBytes: number,
  lookup: ReturnType<typeof sinkLookup>,
): WebhookSender {
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
