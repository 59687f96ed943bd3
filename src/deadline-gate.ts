import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";

/**
 * Set by the unary pipeline (src/pipeline/unary-invocation.ts) on a call whose deadline and
 * cancellation it has already checked, as this gate would: the gate then leaves its signal
 * alone. Reading it would make the AbortController that the pipeline's CallContext makes only
 * when asked, and firing it when the call completes cost another event dispatch (together
 * 3% of a REST GetGroup).
 */
export const kDeadlineChecked = createContextKey(false, {
  description: "the call's deadline was checked before the interceptors",
});

/**
 * Create the interceptor that refuses a call whose signal has already fired before any of it
 * runs: above all a deadline that had passed when the call arrived (`grpc-timeout: 0n`),
 * which must be DEADLINE_EXCEEDED on every path, not answered OK (issue 24). connect's
 * invocation reads the call's signal to build the request, so looking at it costs nothing
 * there; the unary pipeline checks the same before its interceptors (kDeadlineChecked).
 */
export function createDeadlineGate(): Interceptor {
  // Not an async function: the next interceptor's own promise is returned, so no promise of
  // the gate's is made and resolved with it, a turn later, per call.
  return (next) => (req) => {
    if (req.contextValues.get(kDeadlineChecked)) return next(req);
    if (req.signal.aborted) {
      const reason: unknown = req.signal.reason;
      return Promise.reject(
        reason instanceof ConnectError
          ? reason
          : new ConnectError("the operation timed out", Code.DeadlineExceeded),
      );
    }
    return next(req);
  };
}
