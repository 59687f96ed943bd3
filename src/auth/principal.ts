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
