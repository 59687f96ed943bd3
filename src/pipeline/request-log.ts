import { randomUUID } from "node:crypto";
import { codeName } from "../errors.js";
import type { Metrics, Protocol } from "../metrics/metrics.js";

const requestIdPattern = /^[\w.:-]{1,128}$/;

/** A request's id, on every protocol and path: its X-Request-Id if well formed, else a new one. */
export function requestIdOf(given: unknown): string {
  return typeof given === "string" && requestIdPattern.test(given) ? given : randomUUID();
}

/** What one request's log line says. */
export interface RequestLine {
  reqId: string;
  /** `package.Service/Method` of the call; undefined for a request that reached no RPC. */
  rpc: string | undefined;
  /** What the line names instead when there is no RPC: `GET /route`. */
  route?: string;
  protocol: Protocol;
  /** The HTTP status. */
  status: number;
  /** The gRPC code the call ended with (0: OK); undefined for a request that ran no RPC. */
  code: number | undefined;
  /** From the request's arrival to its answer. */
  durationMs: number;
  /** Whether the request counts in the RPC metrics (calls and RPC-protocol requests do). */
  counted: boolean;
}

/** Where the line goes: the server's logger at info. */
export type LineWriter = (fields: Record<string, unknown>, msg: string) => void;

/**
 * Create the one writer of the request log: one line per request, whatever path answered it
 * (the lean gRPC path calls it when a call ends; every request served through fastify, from
 * its onResponse hook), and the RPC metrics recorded from the same figures.
 */
export function createRequestLog(metrics: Metrics, write: LineWriter): (line: RequestLine) => void {
  return (line) => {
    if (line.counted) {
      metrics.rpc(line.rpc, line.protocol, line.code, line.durationMs / 1000);
    }
    write(
      {
        reqId: line.reqId,
        method: line.rpc ?? line.route,
        protocol: line.protocol,
        status: line.status,
        code: line.code === undefined ? undefined : codeName(line.code),
        durationMs: Math.round(line.durationMs * 100) / 100,
      },
      "request",
    );
  };
}
