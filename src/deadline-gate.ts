import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

/**
 * Create the interceptor that refuses a call whose signal has already fired before any of it
 * runs: above all a deadline that had passed when the call arrived (`grpc-timeout: 0n`),
 * which must be DEADLINE_EXCEEDED on every path, not answered OK (issue 24). connect's
 * invocation reads the call's signal to build the request, so looking at it costs nothing.
 */
export function createDeadlineGate(): Interceptor {
  return (next) => async (req) => {
    if (req.signal.aborted) {
      const reason: unknown = req.signal.reason;
      throw reason instanceof ConnectError
        ? reason
        : new ConnectError("the operation timed out", Code.DeadlineExceeded);
    }
    return next(req);
  };
}
