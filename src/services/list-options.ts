import type { HandlerContext } from "@connectrpc/connect";
import { kListScope, kPrincipal } from "../auth/principal.js";
import type { ParseOptions } from "../store/list.js";

/**
 * The list-engine options of a List call: page tokens bound to the caller's identity, and the
 * results limited to the subtrees the access interceptor put in kListScope. A call with no
 * principal never passed the access interceptor (a server composed without it): it gets no
 * scope, as every other RPC of such a server is unchecked too.
 */
export function listOptions(ctx: HandlerContext): ParseOptions {
  const principal = ctx.values.get(kPrincipal);
  if (!principal) return {};
  return { caller: principal.identityUid, scope: ctx.values.get(kListScope) };
}
