import type { ServerHttp2Stream } from "node:http2";
import { Code, type ConnectError } from "@connectrpc/connect";
import type { FastifyInstance, FastifyReply, RawServerBase } from "fastify";
import { connectEndStreamFrame, connectErrorJson } from "../pipeline/connect-protocol.js";
import { rpcPath } from "./rpc-path.js";
import { protocolError, statusTrailers } from "./status-trailers.js";

/** The RPC protocol a request speaks, judged from its content type, or undefined for REST. */
function rpcProtocol(
  type: string,
  path: string,
  connectGet: boolean,
): "grpc" | "grpc-web" | "connect-stream" | "connect" | undefined {
  if (type.startsWith("application/grpc-web")) return "grpc-web";
  if (type.startsWith("application/grpc")) return "grpc";
  if (type.startsWith("application/connect+")) return "connect-stream";
  if (!rpcPath.test(path)) return undefined;
  if (connectGet || /^application\/(json|proto)\s*(;|$)/.test(type)) return "connect";
  return undefined;
}

/**
 * Add a hook (to the app, so that it runs before any body is read) that answers a call to an
 * RPC the server does not serve with UNIMPLEMENTED in the caller's own protocol: trailers-only
 * for gRPC and gRPC-Web, an end-of-stream message for Connect streams, HTTP 501 with the
 * error JSON for unary Connect. Without it such calls reached the REST catch-all: a REST 404
 * with no grpc-status, and a streaming call that waited for its body until the request timeout.
 */
export function addUnknownRpcAnswer<S extends RawServerBase>(
  app: FastifyInstance<S>,
  domain: string,
  served: ReadonlyMap<string, readonly string[]>,
): void {
  // A callback hook, not an async one: every request passes it, and few are unknown RPCs.
  app.addHook("onRequest", (req, reply, done) => {
    // Only the REST gateway's catch-all, or no route at all: served RPCs have exact routes,
    // for the methods they answer.
    const route = req.routeOptions.url;
    if (route !== "/*" && route !== undefined) return done();
    const q = req.url.indexOf("?");
    const path = q < 0 ? req.url : req.url.slice(0, q);
    const allowed = served.get(path);
    if (allowed) {
      // A served RPC, another method (PUT, HEAD, OPTIONS...): 405, as connect-es answers it,
      // with the methods it does answer.
      Promise.resolve()
        .then(() => {
          reply.code(405).header("allow", allowed.join(", ")).send();
        })
        .catch(done);
      return;
    }
    // An unknown RPC on a method nothing routes (OPTIONS without CORS) keeps the 404.
    if (route === undefined) return done();
    const type = String(req.headers["content-type"] ?? "").toLowerCase();
    const connectGet = req.method === "GET" && /[?&]connect=v1(&|$)/.test(req.url);
    const protocol = rpcProtocol(type, path, connectGet);
    if (!protocol) return done();
    const err = protocolError(
      Code.Unimplemented,
      `${path.slice(1)} is not a method this server serves`,
      domain,
    );
    // Answered here: the chain stops (a callback hook that replies does not call done). A
    // microtask later, as when async hooks came before this one: a request whose head is
    // followed by bytes that are no request (a body without a length) gets the parser's 400,
    // which closes the connection, before this answer could go out ahead of it.
    Promise.resolve()
      .then(() => {
        send(reply as unknown as FastifyReply, protocol, type, err);
      })
      .catch(done);
  });
}

/** Trailers-only in the response headers (gRPC-Web; gRPC over HTTP/1.1). */
function sendHeaders(reply: FastifyReply, type: string, err: ConnectError): FastifyReply {
  reply.code(200).header("content-type", type.split(";")[0]!);
  return reply.headers(statusTrailers(err)).send();
}

function send(
  reply: FastifyReply,
  protocol: "grpc" | "grpc-web" | "connect-stream" | "connect",
  type: string,
  err: ConnectError,
): FastifyReply {
  switch (protocol) {
    case "grpc": {
      // Trailers-only: one HEADERS frame that ends the stream, as the gRPC spec has it.
      const stream = (reply.raw as { stream?: ServerHttp2Stream }).stream;
      if (stream) {
        reply.hijack();
        stream.respond(
          { ":status": 200, "content-type": type.split(";")[0]!, ...statusTrailers(err) },
          { endStream: true },
        );
        return reply;
      }
      return sendHeaders(reply, type, err);
    }
    case "grpc-web": {
      return sendHeaders(reply, type, err);
    }
    case "connect-stream": {
      const frame = connectEndStreamFrame(err);
      return reply.code(200).header("content-type", type.split(";")[0]!).send(Buffer.from(frame));
    }
    case "connect":
      return reply
        .code(501)
        .header("content-type", "application/json")
        .send(Buffer.from(connectErrorJson(err)));
  }
}
