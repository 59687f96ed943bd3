import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { kListScope, kPrincipal, type Principal } from "../auth/principal.js";
import { unauthenticated } from "../errors.js";
import type { ParseOptions } from "../list/list.js";

/** The authenticated caller of a request; the access interceptor has set it on every API call. */
export function callerOf(ctx: HandlerContext): Principal {
  const principal = ctx.values.get(kPrincipal);
  // Only reachable if a service were served without the access interceptor: fail closed.
  if (!principal) throw unauthenticated();
  return principal;
}

/**
 * The list options of a List call: the caller's scope (the groups the access interceptor found
 * it may list under) and the caller, to whom page tokens are bound.
 */
export function listOptionsOf(ctx: HandlerContext): ParseOptions {
  requireTimeLeft(ctx);
  return { caller: callerOf(ctx).identityUid, scope: ctx.values.get(kListScope) };
}

/**
 * Throw DEADLINE_EXCEEDED if the call's deadline has passed (a call that waited, in a queue or
 * behind slow interceptors, past the time its client gives it): long work such as a List over
 * a large subtree does not start for nobody. REST calls have no deadline.
 */
export function requireTimeLeft(ctx: HandlerContext): void {
  const left = ctx.timeoutMs();
  if (left !== undefined && left <= 0) {
    throw new ConnectError(
      "Deadline exceeded: the call's deadline has passed",
      Code.DeadlineExceeded,
    );
  }
}
