import type { ServerResponse } from "node:http";
import type { Code } from "@connectrpc/connect";
import type { FastifyInstance, RawServerBase } from "fastify";
import { safeDecode } from "./grpc-message-encoding.js";
import { protocolError, statusTrailers } from "./status-trailers.js";

/**
 * Add a hook (to the app) that gives a gRPC-Web error the ErrorInfo every error carries when
 * the protocol layer raised it before any interceptor ran (bad compression, a truncated
 * frame, ...). gRPC-Web sends its trailers as the body's last frame (flag 0x80, HTTP/1-style
 * header lines); a trailer frame with a non-zero grpc-status and no grpc-status-details-bin
 * is rewritten with them. Register it after the text-mode hook: it must see binary frames.
 */
export function addGrpcWebErrorInfo<S extends RawServerBase>(
  app: FastifyInstance<S>,
  domain: string,
): void {
  // A callback hook, not an async one: every request passes it, and most are not gRPC-Web.
  app.addHook("onRequest", (req, reply, done) => {
    const type = req.headers["content-type"];
    if (typeof type !== "string" || !type.startsWith("application/grpc-web")) return done();
    const res = reply.raw as unknown as ServerResponse;
    const { write, end } = res;
    type Fn = (...a: unknown[]) => unknown;
    const fix = (chunk: unknown) => (chunk instanceof Uint8Array ? fixed(chunk, domain) : chunk);
    res.write = ((chunk: unknown, ...rest: unknown[]) =>
      (write as Fn).call(res, fix(chunk), ...rest)) as typeof res.write;
    res.end = ((chunk?: unknown, ...rest: unknown[]) =>
      (end as Fn).call(
        res,
        typeof chunk === "function" ? chunk : fix(chunk),
        ...rest,
      )) as unknown as typeof res.end;
    done();
  });
}

/** The chunk with its trailer frame given ErrorInfo where it lacks details; else itself. */
function fixed(chunk: Uint8Array, domain: string): Uint8Array {
  // A trailer frame alone in its chunk: 0x80, a 4-byte length, then exactly that many bytes.
  if (chunk.length < 5 || chunk[0] !== 0x80) return chunk;
  const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (bytes.readUInt32BE(1) !== bytes.length - 5) return chunk;
  const lines = bytes.subarray(5).toString("latin1").split("\r\n").filter(Boolean);
  const trailers = new Map<string, string>();
  for (const line of lines) {
    const i = line.indexOf(":");
    if (i > 0) trailers.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  const status = Number(trailers.get("grpc-status"));
  if (!status || trailers.has("grpc-status-details-bin")) return chunk;
  const message = safeDecode(trailers.get("grpc-message") ?? "");
  for (const [k, v] of Object.entries(
    statusTrailers(protocolError(status as Code, message, domain)),
  )) {
    trailers.set(k, v);
  }
  const body = Buffer.from([...trailers].map(([k, v]) => `${k}: ${v}\r\n`).join(""), "latin1");
  const head = Buffer.alloc(5);
  head[0] = 0x80;
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}
