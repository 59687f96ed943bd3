// No runtime imports: the service table, which the web console bundles, holds rules.

/**
 * Rule says what one RPC needs:
 * - `public`: no token at all (the STS exchange, health, server reflection);
 * - `authenticated`: any valid token (redeeming an invite, which checks its own rules);
 * - `resource`: the capability at the group of the uid found at `target` (a request field
 *   path such as `uid`, `parent` or `group.uid`) or at any group above it. An empty `parent`
 *   is allowed only where `root` says so (a person creating an organization). `role` marks a
 *   role target: a built-in role belongs to no group, so holding the capability anywhere is
 *   enough (its uid is the same in every installation: nothing is revealed, and the handler
 *   refuses writes with FAILED_PRECONDITION); with `read`, a custom role is also visible from
 *   the groups below its own, where it can be bound (as ListRoles shows it); with `self`,
 *   a caller whose own identity is the target needs no capability (reading oneself: a
 *   person's identity lives in no group, so no binding could ever grant it); with `selfField`
 *   (a request field naming an identity), a caller asking about its own identity needs no
 *   capability (explaining one's own access);
 * - `list`: the capability somewhere; the List returns only what lies under the groups
 *   where the caller holds it;
 * - `adapter`: a v1 method, a thin adapter over v2. The caller must be authenticated; each v2
 *   call the adapter makes (one of `calls`) is then authorized by that v2 RPC's own rule, on
 *   the v2 request the adapter built, so a v1 call is allowed exactly when the v2 calls are.
 *
 * `C` is the capability type: the service table writes its rules with the literal strings it
 * names (`Rule<"groups.list">`), so that the catalog can be derived from the table and every
 * name a rule uses checked against it at compile time (src/auth/capability-catalog.ts).
 */
export type Rule<C extends string = string> =
  | {
      kind: "public";
      /**
       * A valid bearer token, if one comes, names the caller (kPrincipal) for the method's
       * own use; a missing or invalid one leaves the call anonymous, never refused.
       */
      identifies?: true;
    }
  | { kind: "authenticated" }
  | {
      kind: "resource";
      capability: C;
      target: string;
      root?: "person";
      role?: "read" | "write";
      self?: true;
      selfField?: string;
    }
  | { kind: "list"; capability: C }
  | { kind: "adapter"; calls: readonly string[] };

/** The capability a rule names, if any (`never` for public, authenticated and adapter rules). */
export type CapabilityOfRule<R> = R extends { capability: infer C } ? C : never;
