import type { FastifyInstance, FastifyRequest } from "fastify";
import type { CallInfo } from "../call-info.js";
import { rpcPath } from "../grpc/rpc-path.js";
import type { Protocol } from "../metrics/metrics.js";
import type { RequestLine } from "../pipeline/request-log.js";

/**
 * Answer every request with its X-Request-Id, and write its one log line (and RPC metrics)
 * when fastify answered it: the lean gRPC path, which skips fastify, writes its own. Added
 * after every other onRequest hook, as it always was.
 */
export function addRequestLogHooks(
  app: FastifyInstance,
  deps: {
    requestLog: (line: RequestLine) => void;
    callInfoOf: (req: FastifyRequest) => CallInfo | undefined;
  },
): void {
  const { requestLog, callInfoOf } = deps;
  // Callback hooks, not async ones: every request passes both, and an async hook costs each
  // a promise and a turn of the microtask queue.
  app.addHook("onRequest", (req, reply, done) => {
    reply.header("x-request-id", req.id);
    done();
  });
  app.addHook("onResponse", (req, reply, done) => {
    const info = callInfoOf(req);
    const protocol = protocolOf(req);
    requestLog({
      reqId: req.id,
      rpc: info?.rpc,
      route: `${req.method} ${req.routeOptions.url ?? req.url.split("?")[0]}`,
      protocol,
      status: reply.statusCode,
      code: info?.code,
      durationMs: reply.elapsedTime,
      // Every call of the RPC layer (the Connect router, the lean Connect path, the REST
      // gateway, whose unknown routes included) and every RPC-protocol request (unknown
      // RPCs): not the console's files or health checks.
      counted: info !== undefined || protocol !== "rest",
    });
    done();
  });
}

/** Tell the protocol of a request from its content type, for the request log. */
function protocolOf(req: FastifyRequest): Protocol {
  const ct = req.headers["content-type"] ?? "";
  if (ct.startsWith("application/grpc-web")) return "grpc-web";
  if (ct.startsWith("application/grpc")) return "grpc";
  if (req.headers["connect-protocol-version"] || ct.startsWith("application/connect")) {
    return "connect";
  }
  // No REST route has an RPC's path: a call there without Connect's header is still Connect.
  const q = req.url.indexOf("?");
  return rpcPath.test(q < 0 ? req.url : req.url.slice(0, q)) ? "connect" : "rest";
}
