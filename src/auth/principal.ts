import { createContextKey } from "@connectrpc/connect";

/** Principal is the authenticated caller of a request. */
export interface Principal {
  /** The identity uid (the token's `sub`). */
  identityUid: string;
  /** The verified email of a person, if any. */
  email?: string;
  /**
   * A narrowed token's limits (STS `cap`, `group`): every access decision intersects what the
   * identity holds with them. Absent: the identity's full access.
   */
  narrowing?: Narrowing;
}

/** What a narrowed token may do at most. */
export interface Narrowing {
  /** Only these capabilities; absent: any the identity holds. */
  readonly capabilities?: ReadonlySet<string>;
  /** Only at or below this group; absent: anywhere the identity holds them. */
  readonly group?: string;
}

/** The narrowing a verified token's `cap` and `grp` claims say, or undefined for none. */
export function narrowingOf(token: {
  cap?: readonly string[];
  grp?: string;
}): Narrowing | undefined {
  if (token.cap === undefined && token.grp === undefined) return undefined;
  return {
    ...(token.cap === undefined ? {} : { capabilities: new Set(token.cap) }),
    ...(token.grp === undefined ? {} : { group: token.grp }),
  };
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
