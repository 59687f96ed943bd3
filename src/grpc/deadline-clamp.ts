import type { FastifyInstance, RawServerBase } from "fastify";
import { maxDeadlineMs } from "../pipeline/call-context.js";

const grpcTimeout = /^(\d{1,8})([HMSmun])$/;
const grpcUnitMs: Record<string, number> = {
  H: 3_600_000,
  M: 60_000,
  S: 1_000,
  m: 1,
  u: 0.001,
  n: 0.000_001,
};

/** The milliseconds a well-formed `grpc-timeout` value asks for; undefined for a malformed one. */
export function grpcTimeoutMs(value: string): number | undefined {
  const m = grpcTimeout.exec(value);
  return m ? Number(m[1]) * grpcUnitMs[m[2]!]! : undefined;
}

/** The milliseconds a well-formed `connect-timeout-ms` value asks for; undefined otherwise. */
export function connectTimeoutMs(value: string): number | undefined {
  return /^\d{1,10}$/.test(value) ? Number(value) : undefined;
}

/**
 * Add a hook (to the app, so that it runs before the Connect routes) that clamps a requested
 * deadline (`grpc-timeout` of gRPC and gRPC-Web, `connect-timeout-ms` of Connect) to
 * `maxDeadlineMs`. A longer one is as good as none, and left alone it became a 1 ms deadline.
 * Malformed values are left for the protocol to refuse.
 */
export function addDeadlineClamp<S extends RawServerBase>(app: FastifyInstance<S>): void {
  // A callback hook, not an async one: every request passes it.
  app.addHook("onRequest", (req, _reply, done) => {
    const headers = req.raw.headers;
    const grpc = headers["grpc-timeout"];
    if (typeof grpc === "string") {
      const ms = grpcTimeoutMs(grpc);
      if (ms !== undefined && ms > maxDeadlineMs) {
        // In seconds, to stay within the header's eight digits.
        headers["grpc-timeout"] = `${Math.floor(maxDeadlineMs / 1000)}S`;
      }
    }
    const connect = headers["connect-timeout-ms"];
    if (typeof connect === "string" && (connectTimeoutMs(connect) ?? 0) > maxDeadlineMs) {
      headers["connect-timeout-ms"] = String(maxDeadlineMs);
    }
    done();
  });
}
