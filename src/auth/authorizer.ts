import { permissionDenied } from "../errors.js";
import type { IamStore } from "../store/iam-store.js";
import { isAtOrBelow } from "../uid.js";
import type { Capability } from "./capabilities.js";
import type { Principal } from "./principal.js";

/** What authorization asks the store. */
export type AccessStore = Pick<IamStore, "capabilitiesAt" | "groupsWithCapability">;

/**
 * Authorizer answers "may this caller do this here?" against the store, on every call, so a
 * removed binding takes effect at once.
 */
export interface Authorizer {
  /**
   * Throw PERMISSION_DENIED unless the caller holds `capability` at the group of `uid` or any
   * group above it. Whether the resource exists plays no part, so the answer reveals nothing.
   */
  require(principal: Principal, capability: Capability, uid: string): Promise<void>;
  /** Every capability the caller holds at `uid` (through bindings at it or above it). */
  capabilitiesAt(principal: Principal, uid: string): Promise<ReadonlySet<string>>;
  /**
   * The groups whose subtrees the caller may list with `capability`: the groups of its
   * bindings that grant it, without those already covered by a group above them.
   */
  listScope(principal: Principal, capability: Capability): Promise<string[]>;
}

const nothing: ReadonlySet<string> = new Set();

/**
 * Create the Authorizer over the store's two access queries. A narrowed principal (a token
 * from STS with `cap` or `group`) gets the intersection of what its identity holds with its
 * narrowing, in every answer: never more than either.
 */
export function createAuthorizer(store: AccessStore): Authorizer {
  const capabilitiesAt = async (principal: Principal, uid: string) => {
    const narrowing = principal.narrowing;
    if (narrowing?.group !== undefined && !isAtOrBelow(uid, narrowing.group)) return nothing;
    const held = await store.capabilitiesAt(principal.identityUid, pathPrefixes(uid));
    const only = narrowing?.capabilities;
    if (only === undefined) return held;
    return new Set([...held].filter((c) => only.has(c)));
  };
  return {
    capabilitiesAt,
    async require(principal, capability, uid) {
      const held = await capabilitiesAt(principal, uid);
      if (!held.has(capability)) throw permissionDenied(capability);
    },
    async listScope(principal, capability) {
      const narrowing = principal.narrowing;
      if (narrowing?.capabilities && !narrowing.capabilities.has(capability)) return [];
      const groups = outermost(await store.groupsWithCapability(principal.identityUid, capability));
      const within = narrowing?.group;
      if (within === undefined) return groups;
      // A grant above the token's group reaches only the group's subtree; one beside it, nothing.
      return outermost(
        groups.flatMap((g) =>
          isAtOrBelow(g, within) ? [g] : isAtOrBelow(within, g) ? [within] : [],
        ),
      );
    },
  };
}

/**
 * Whether a narrowed principal's narrowing lets it use `capability` at `uid` at all (what a
 * rule's shortcut that needs no binding must still respect); true for one not narrowed.
 */
export function narrowingAllows(principal: Principal, capability: string, uid: string): boolean {
  const n = principal.narrowing;
  if (n === undefined) return true;
  if (n.capabilities !== undefined && !n.capabilities.has(capability)) return false;
  return n.group === undefined || (uid !== "" && isAtOrBelow(uid, n.group));
}

/**
 * The uid and every uid above it: `a/b/c` gives `a`, `a/b`, `a/b/c`. UIDPs embed the path
 * from the root, so these are exactly the groups a binding could grant `uid` from.
 */
export function pathPrefixes(uid: string): string[] {
  const out: string[] = [];
  for (let i = uid.indexOf("/"); i >= 0; i = uid.indexOf("/", i + 1)) out.push(uid.slice(0, i));
  out.push(uid);
  return out;
}

/** Drop every group that lies below another group of the list. */
function outermost(groups: readonly string[]): string[] {
  const sorted = [...new Set(groups)].sort();
  const out: string[] = [];
  // Sorted, an ancestor comes right before its subtree.
  for (const g of sorted) {
    const last = out[out.length - 1];
    if (last === undefined || !isAtOrBelow(g, last)) out.push(g);
  }
  return out;
}
