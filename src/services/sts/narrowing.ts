import { Code, ConnectError } from "@connectrpc/connect";
import type { Authorizer } from "../../auth/authorizer.js";
import {
  canonicalCapability,
  capabilities as catalog,
  nearestCapability,
} from "../../auth/capabilities.js";
import type { Principal } from "../../auth/principal.js";
import type { TokenNarrowing } from "../../auth/tokens.js";
import { invalidField } from "../../errors.js";
import { isAtOrBelow, isUid } from "../../uid.js";

/** What an exchange asks to narrow its token to: `cap` (repeatable) and `group`. */
export interface NarrowingRequest {
  cap: readonly string[];
  group: string;
}

/** Whether an exchange asks for a narrowed token at all. */
export function asksNarrowing(req: NarrowingRequest): boolean {
  return req.cap.length > 0 || req.group !== "";
}

/**
 * Check a narrowing request's form: every `cap` a capability of the catalog (an alias is taken
 * as the catalog spells it), `group` a uid. Throws INVALID_ARGUMENT naming the field.
 */
export function parseNarrowing(req: NarrowingRequest): { cap?: string[]; group?: string } {
  const cap: string[] = [];
  for (const c of req.cap) {
    const canonical = canonicalCapability(c);
    if (canonical === undefined) {
      const near = nearestCapability(c);
      throw invalidField(
        "cap",
        `${JSON.stringify(c.slice(0, 100))} is not a capability${near ? `; did you mean "${near}"?` : ""}`,
      );
    }
    if (!cap.includes(canonical)) cap.push(canonical);
  }
  if (req.group !== "" && !isUid(req.group)) throw invalidField("group", "is not a valid uid");
  return {
    ...(cap.length === 0 ? {} : { cap }),
    ...(req.group === "" ? {} : { group: req.group }),
  };
}

/**
 * The narrowing of a token for `holder` (an identity, with the narrowing of the token it
 * presented, if any): the requested capabilities and group, each of which the holder must
 * have. A capability it holds nowhere (within `group`, when one is asked for), a group where
 * it holds nothing, or a group outside the presented token's own, is refused with
 * PERMISSION_DENIED saying which: a token is never wider than what it was made from. Without
 * `cap`, the presented token's capabilities carry over; without `group`, its group does.
 */
export async function narrowFor(
  authorizer: Pick<Authorizer, "listScope">,
  holder: Principal,
  asked: { cap?: string[]; group?: string },
): Promise<TokenNarrowing> {
  const from = holder.narrowing;
  if (asked.group !== undefined && from?.group !== undefined) {
    if (!isAtOrBelow(asked.group, from.group)) {
      throw refused(`group ${asked.group} lies outside the presented token's group ${from.group}`);
    }
  }
  const group = asked.group ?? from?.group;
  // Where the holder may use a capability, within the group asked for.
  const usable = async (capability: string) => {
    const scope = await authorizer.listScope(holder, capability as never);
    return group === undefined
      ? scope.length > 0
      : scope.some((g) => isAtOrBelow(g, group) || isAtOrBelow(group, g));
  };
  const where = group === undefined ? "" : ` at or below group ${group}`;
  for (const c of asked.cap ?? []) {
    if (!(await usable(c))) {
      throw refused(
        `the identity does not hold ${c}${where}${from ? " (or the presented token is narrowed without it)" : ""}`,
      );
    }
  }
  if (asked.cap === undefined && asked.group !== undefined) {
    // A group alone: the identity must hold something there, or the token could do nothing.
    const candidates = from?.capabilities ? [...from.capabilities] : catalog;
    let any = false;
    for (const c of candidates) {
      if (await usable(c)) {
        any = true;
        break;
      }
    }
    if (!any) throw refused(`the identity holds nothing${where}`);
  }
  const cap = asked.cap ?? (from?.capabilities ? [...from.capabilities] : undefined);
  return {
    ...(cap === undefined ? {} : { cap }),
    ...(group === undefined ? {} : { grp: group }),
  };
}

function refused(why: string): ConnectError {
  return new ConnectError(
    `Permission denied: cannot narrow the token: ${why}; ask only for what the identity holds`,
    Code.PermissionDenied,
  );
}
