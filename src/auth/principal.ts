import { createContextKey } from "@connectrpc/connect";

/** Principal is the authenticated caller of a request. */
export interface Principal {
  /** The identity uid (the token's `sub`). */
  identityUid: string;
  /** The verified email of a person, if any. */
  email?: string;
}

/**
 * The caller of the current request, set by the authentication interceptor and read by
 * handlers. Undefined when no authentication has run (token endpoints, health).
 */
export const kPrincipal = createContextKey<Principal | undefined>(undefined, {
  description: "the authenticated caller",
});

/**
 * The groups under which the caller may list the resources of the current List RPC, set by
 * the authorization interceptor: the List returns only what lies at or below one of them.
 */
export const kListScope = createContextKey<readonly string[]>([], {
  description: "the groups whose subtrees the caller may list",
});
