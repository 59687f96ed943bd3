import type { ServerResponse } from "node:http";
import type { DescService, JsonValue } from "@bufbuild/protobuf";
import type { FastifyInstance, RawServerBase } from "fastify";
import { millisecondTimestampsIfAny } from "../json/timestamp-json.js";

/**
 * Add a hook (to the app) that gives every Timestamp of a successful unary Connect JSON
 * answer its millisecond fraction, as the REST gateway does (protobuf-es writes a whole
 * second as `...:52Z`; the API's format is `...:52.000Z`). Only answers of `services`'
 * methods whose output holds a Timestamp are touched; they are re-serialized once.
 */
export function addConnectJsonTimes<S extends RawServerBase>(
  app: FastifyInstance<S>,
  services: readonly DescService[],
): void {
  const fixers = new Map<string, (json: JsonValue) => JsonValue>();
  for (const service of services) {
    for (const method of service.methods) {
      if (method.methodKind !== "unary") continue;
      const fix = millisecondTimestampsIfAny(method.output);
      if (fix) fixers.set(`/${service.typeName}/${method.name}`, fix);
    }
  }
  app.addHook("onRequest", async (req, reply) => {
    const q = req.url.indexOf("?");
    const fix = fixers.get(q < 0 ? req.url : req.url.slice(0, q));
    if (!fix) return;
    const type = String(req.headers["content-type"] ?? "");
    const json =
      req.method === "GET"
        ? /[?&]encoding=json(&|$)/.test(req.url)
        : /^application\/json/i.test(type);
    if (!json) return;
    rewriteBody(reply.raw as unknown as ServerResponse, fix);
  });
}

/** Hold a 200 JSON answer's head and body, and send them with the body rewritten. */
function rewriteBody(res: ServerResponse, fix: (json: JsonValue) => JsonValue): void {
  const { writeHead, write, end } = res;
  type Fn = (...a: unknown[]) => unknown;
  let head: { status: number; headers: Record<string, unknown> } | undefined;
  const chunks: Buffer[] = [];
  res.writeHead = ((status: number, headers?: Record<string, unknown>) => {
    if (status !== 200 || headers === undefined) {
      Object.assign(res, { writeHead, write, end });
      return writeHead.call(res, status, headers as never);
    }
    head = { status, headers };
    return res;
  }) as typeof res.writeHead;
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    if (!head) return (write as Fn).call(res, chunk, ...rest);
    if (chunk instanceof Uint8Array || typeof chunk === "string") chunks.push(Buffer.from(chunk));
    const cb = rest.find((r) => typeof r === "function") as (() => void) | undefined;
    cb?.();
    return true;
  }) as typeof res.write;
  res.end = ((chunk?: unknown, ...rest: unknown[]) => {
    if (!head) return (end as Fn).call(res, chunk, ...rest);
    if (chunk instanceof Uint8Array || typeof chunk === "string") chunks.push(Buffer.from(chunk));
    const { status, headers } = head;
    head = undefined;
    Object.assign(res, { writeHead, write, end });
    let body = Buffer.concat(chunks);
    try {
      body = Buffer.from(JSON.stringify(fix(JSON.parse(body.toString("utf8")) as JsonValue)));
    } catch {
      // Not JSON after all: sent as it came.
    }
    const lengthKey = Object.keys(headers).find((k) => k.toLowerCase() === "content-length");
    if (lengthKey !== undefined) headers[lengthKey] = String(body.length);
    writeHead.call(res, status, headers as never);
    const cb = rest.find((r) => typeof r === "function");
    return (end as Fn).call(res, body, ...(cb ? [cb] : []));
  }) as unknown as typeof res.end;
}
