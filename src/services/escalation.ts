import type { Authorizer } from "../auth/authorizer.js";
import type { Principal } from "../auth/principal.js";
import { permissionDenied } from "../errors.js";

/**
 * Throw PERMISSION_DENIED unless the caller holds every one of `capabilities` at `group`: no
 * one may grant (through a binding or a custom role) what they do not hold there themselves.
 */
export async function requireAll(
  authz: Authorizer,
  principal: Principal,
  capabilities: readonly string[],
  group: string,
): Promise<void> {
  const held = await authz.capabilitiesAt(principal, group);
  const missing = capabilities.find((c) => !held.has(c));
  if (missing !== undefined) throw permissionDenied(missing);
}
