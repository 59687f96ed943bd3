import { createContextKey } from "@connectrpc/connect";

/**
 * CallInfo is what one request's log line needs from inside the RPC layer: the RPC that ran
 * and the code it ended with. The HTTP layer creates it per request and passes it in as a
 * context value; the error interceptor fills it in.
 */
export interface CallInfo {
  /** `package.Service/Method`. */
  rpc?: string;
  /** The gRPC code the call ended with; 0 for success. */
  code?: number;
  /** The connection (HTTP/2 session or socket) the call arrived on. */
  connection?: object;
  /** The request's id (X-Request-Id), for log lines written inside the RPC layer. */
  requestId?: string;
}

/** The CallInfo of the current request; a fresh object per request. */
export const kCallInfo = createContextKey<CallInfo | undefined>(undefined, {
  description: "the request's log record",
});
