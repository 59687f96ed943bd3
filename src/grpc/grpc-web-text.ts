import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyInstance, RawServerBase } from "fastify";

const textType = /^application\/grpc-web-text(\+proto)?\s*(;|$)/i;

/**
 * Add a hook (to the app, before the Connect routes read anything) that serves gRPC-Web's
 * text mode, `application/grpc-web-text`, the default of Google's grpc-web client, which
 * connect-node refuses with 415. The request body is base64: it is decoded as it streams in
 * and handed on as `application/grpc-web+proto`; every chunk of the answer is base64-encoded
 * (each padded on its own, as the protocol allows) under the text content type.
 */
export function addGrpcWebText<S extends RawServerBase>(app: FastifyInstance<S>): void {
  // A callback hook, not an async one: every request passes it, and most are not gRPC-Web.
  app.addHook("onRequest", (req, reply, done) => {
    const type = req.headers["content-type"];
    if (typeof type !== "string" || !textType.test(type)) return done();
    const raw = req.raw as unknown as IncomingMessage;
    raw.headers["content-type"] = "application/grpc-web+proto";
    // Connect sizes its read by content-length; the decoded body is shorter.
    delete raw.headers["content-length"];
    const source = raw[Symbol.asyncIterator].bind(raw);
    raw[Symbol.asyncIterator] = () => decodeBase64Stream(source());
    encodeResponse(reply.raw as unknown as ServerResponse);
    done();
  });
}

/** Decode a stream of base64 text, whose chunks may each carry their own padding. */
async function* decodeBase64Stream(chunks: AsyncIterator<unknown>): AsyncGenerator<Buffer> {
  let pending = "";
  for (;;) {
    const next = await chunks.next();
    if (next.done) break;
    pending += Buffer.isBuffer(next.value) ? next.value.toString("latin1") : String(next.value);
    pending = pending.replace(/\s+/g, "");
    const whole = pending.length - (pending.length % 4);
    if (whole === 0) continue;
    yield decodeQuanta(pending.slice(0, whole));
    pending = pending.slice(whole);
  }
  if (pending !== "") yield decodeQuanta(pending);
}

/** Decode whole 4-character quanta, padding allowed at the end of any quantum. */
function decodeQuanta(text: string): Buffer {
  const parts: Buffer[] = [];
  let from = 0;
  for (let pad = text.indexOf("="); pad >= 0; pad = text.indexOf("=", from)) {
    const end = Math.min(text.length, pad + 4 - (pad % 4));
    parts.push(Buffer.from(text.slice(from, end), "base64"));
    from = end;
  }
  parts.push(Buffer.from(text.slice(from), "base64"));
  return Buffer.concat(parts);
}

/** Answer in text mode: the text content type, each written chunk base64-encoded. */
function encodeResponse(res: ServerResponse): void {
  const { writeHead, setHeader, write, end } = res;
  type Fn = (...a: unknown[]) => unknown;
  const retype = (v: unknown) =>
    typeof v === "string" && v.startsWith("application/grpc-web")
      ? "application/grpc-web-text+proto"
      : v;
  res.setHeader = ((name: string, value: unknown) =>
    setHeader.call(
      res,
      name,
      (name.toLowerCase() === "content-type" ? retype(value) : value) as never,
    )) as typeof res.setHeader;
  res.writeHead = ((status: number, ...rest: unknown[]) => {
    const headers = rest.find((r) => typeof r === "object" && r !== null) as
      | Record<string, unknown>
      | undefined;
    if (headers) {
      for (const k of Object.keys(headers)) {
        if (k.toLowerCase() === "content-type") headers[k] = retype(headers[k]);
        if (k.toLowerCase() === "content-length") delete headers[k];
      }
    }
    return (writeHead as Fn).call(res, status, ...rest);
  }) as typeof res.writeHead;
  const encode = (chunk: unknown) =>
    typeof chunk === "string" || chunk instanceof Uint8Array
      ? Buffer.from(Buffer.from(chunk as never).toString("base64"), "latin1")
      : chunk;
  res.write = ((chunk: unknown, ...rest: unknown[]) =>
    (write as Fn).call(res, encode(chunk), ...rest)) as typeof res.write;
  res.end = ((chunk?: unknown, ...rest: unknown[]) =>
    typeof chunk === "function" || chunk === undefined
      ? (end as Fn).call(res, chunk, ...rest)
      : (end as Fn).call(res, encode(chunk), ...rest)) as unknown as typeof res.end;
}
