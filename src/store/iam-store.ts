/**
 * The storage contract of the IAM core: identities, roles, role bindings, and the two access
 * queries every authorization decision is made of. Part of `Store`; the same rules hold
 * (atomic operations, StoreError for what a caller can cause, times in ms since the epoch).
 */
import type { GroupRecord, ListPage, ListQuery } from "./vocabulary.js";

/** How a workload proves it is an identity: claims of an OIDC token from a reachable issuer. */
export interface ClaimMatchRecord {
  issuer: string;
  issuerPattern: string;
  subject: string;
  subjectPattern: string;
  audience: string;
  audiencePattern: string;
  claims: Record<string, string>;
  claimPatterns: Record<string, string>;
}

/** Tokens of an issuer that cannot be reached, verified with keys given up front. */
export interface StaticKeysRecord {
  issuer: string;
  subject: string;
  /** A JWKS document, as a string. */
  issuerKeys: string;
  expirationTime: number;
}

/** A stored identity. */
export interface IdentityRecord {
  uid: string;
  /** The group the identity lives in; "" for a person's root identity. */
  groupUid: string;
  name: string;
  description: string;
  /** Verified email of a person; "" otherwise. */
  email: string;
  /** Creation time, then the time of each token exchange. */
  lastSeenTime: number;
  /** A person's (root identity's) sign-in: the issuer and subject their uid derives from. */
  signIn?: { issuer: string; subject: string };
  /** Exactly one of claimMatch and staticKeys is set, except for a person's root identity. */
  claimMatch?: ClaimMatchRecord;
  staticKeys?: StaticKeysRecord;
  createTime: number;
  updateTime: number;
}

/** Input of createIdentity. */
export interface NewIdentity {
  uid: string;
  groupUid: string;
  name: string;
  description: string;
  claimMatch?: ClaimMatchRecord;
  staticKeys?: StaticKeysRecord;
  now: number;
}

/** A change to an identity; absent fields keep their value. Setting one method clears the other. */
export interface IdentityPatch {
  name?: string;
  description?: string;
  claimMatch?: ClaimMatchRecord;
  staticKeys?: StaticKeysRecord;
}

/** Input of upsertPerson: a person logging in through a trusted user issuer. */
export interface PersonLogin {
  /** Derived from issuer and subject by the caller; a root uid (40 hex). */
  uid: string;
  issuer: string;
  subject: string;
  name: string;
  /** Verified email, or "". */
  email: string;
  now: number;
}

/** A stored role; built-in roles have groupUid "" and builtin true. */
export interface RoleRecord {
  uid: string;
  groupUid: string;
  name: string;
  description: string;
  capabilities: string[];
  builtin: boolean;
  createTime: number;
  updateTime: number;
}

/** Input of createRole. */
export interface NewRole {
  uid: string;
  groupUid: string;
  name: string;
  description: string;
  capabilities: string[];
  now: number;
}

/** A change to a custom role; absent fields keep their value. */
export interface RolePatch {
  name?: string;
  description?: string;
  capabilities?: string[];
}

/** The summaries a role binding is hydrated with. */
export interface RoleBindingRecord {
  uid: string;
  groupUid: string;
  /** The identity bound, or "" for a binding to a team. */
  identityUid: string;
  /** The team bound, or "" for a binding to an identity. */
  teamUid: string;
  roleUid: string;
  createTime: number;
  /** Kept for ordering by update_time; not part of the API resource. */
  updateTime: number;
  /** Empty (every field "") for a binding to a team. */
  identity: { uid: string; name: string; description: string; subject: string; issuer: string };
  /** Set for a binding to a team only. */
  team?: { uid: string; name: string; description: string };
  group: { uid: string; name: string; description: string };
  role: { uid: string; name: string; description: string };
  /** When it stops granting anything (ms since the epoch); absent: until revoked. */
  expireTime?: number;
}

/** What expireRoleBinding did: deleted the binding, or found nothing to delete. */
export type ExpiredBinding = { kind: "expired"; binding: RoleBindingRecord } | { kind: "absent" };

/** Input of createRoleBinding: exactly one of identityUid and teamUid is not empty. */
export interface NewRoleBinding {
  uid: string;
  groupUid: string;
  identityUid: string;
  /** A team to bind instead of an identity (identityUid then ""). */
  teamUid?: string;
  roleUid: string;
  now: number;
  /** When it stops granting (ms since the epoch); absent: until revoked. */
  expireTime?: number;
}

/** Resource filters of ListRoleBindings (each exact; "" means unset). */
export interface RoleBindingFilters {
  identity?: string;
  group?: string;
  role?: string;
  team?: string;
  /**
   * Bindings an identity holds: its own and those of the teams it is a member of (the people
   * view's; no API filter).
   */
  heldBy?: string;
}

/** The OpenID Connect settings of an identity provider. */
export interface OidcRecord {
  issuer: string;
  clientId: string;
  /** Stored as given, for talking to the provider; the API never returns it. */
  clientSecret: string;
  additionalScopes: string[];
  groupsClaim: string;
}

/** A stored identity provider: an OIDC provider people of a group log in with. */
export interface IdentityProviderRecord {
  uid: string;
  groupUid: string;
  name: string;
  description: string;
  /** A role uid, or "" for none. */
  defaultRole: string;
  oidc: OidcRecord;
  /**
   * The identity that last created or changed the provider, whose authority grants its
   * default role; "" for a provider written before writers were recorded (it grants nothing).
   */
  writerUid: string;
  /** Email domains the provider declares (lowercase DNS names, no repeats); not verified. */
  emailDomains: string[];
  /** Which team each value of the groups claim puts a person in. */
  groupMappings: GroupMappingRecord[];
  createTime: number;
  updateTime: number;
}

/** A value of a provider's groups claim and the team it puts a person in. */
export interface GroupMappingRecord {
  group: string;
  teamUid: string;
}

/** Input of createIdentityProvider. */
export interface NewIdentityProvider {
  uid: string;
  groupUid: string;
  name: string;
  description: string;
  defaultRole: string;
  oidc: OidcRecord;
  /** The identity creating the provider. */
  writerUid: string;
  /** Default none. */
  emailDomains?: string[];
  /** Default none. */
  groupMappings?: GroupMappingRecord[];
  now: number;
}

/** A change to an identity provider; absent fields keep their value, oidc changes whole. */
export interface IdentityProviderPatch {
  name?: string;
  description?: string;
  defaultRole?: string;
  oidc?: OidcRecord;
  /** The identity making the change. */
  writerUid?: string;
  emailDomains?: string[];
  groupMappings?: GroupMappingRecord[];
}

/** A provider a sign-in lookup found: what the person choosing it is shown, nothing more. */
export interface SignInProviderMatch {
  uid: string;
  name: string;
  /** The name of the organization (root group) that declares the provider. */
  organization: string;
  /** Whether DNS verified the organization's claim of the domain (never, for a name). */
  verified: boolean;
}

/** The cloud accounts of an account association; an absent block is not linked. */
export interface AccountLinks {
  amazon?: { account: string };
  google?: { projectId: string; projectNumber: string };
  /** `clientIdKeys` names some of the ids (name -> id), as v1's map keys them. */
  azure?: { tenantId: string; clientIds: string[]; clientIdKeys?: Record<string, string> };
  /** Installation ids as decimal strings (int64 in the API). */
  github?: { installationIds: string[] };
}

/** A stored account association; its uid is its group's uid (one per group). */
export interface AccountAssociationRecord extends AccountLinks {
  uid: string;
  name: string;
  description: string;
  createTime: number;
  updateTime: number;
}

/** Input of createAccountAssociation; `uid` is the group's uid. */
export interface NewAccountAssociation extends AccountLinks {
  uid: string;
  name: string;
  description: string;
  now: number;
}

/**
 * A change to an account association; absent fields keep their value. A provider block set to
 * null is unlinked.
 */
export interface AccountAssociationPatch {
  name?: string;
  description?: string;
  amazon?: AccountLinks["amazon"] | null;
  google?: AccountLinks["google"] | null;
  azure?: AccountLinks["azure"] | null;
  github?: AccountLinks["github"] | null;
}

/**
 * IamStore is the part of Store that holds identities, roles, role bindings, identity providers
 * and account associations.
 */
export interface IamStore {
  /**
   * Create an identity. `uid` must be a direct child of `groupUid` (a plain Error otherwise, as
   * createGroup). Throws `not_found` if its group does not exist, `already_exists` if the uid
   * is taken.
   */
  createIdentity(identity: NewIdentity): Promise<IdentityRecord>;
  /** Get an identity, or undefined. */
  getIdentity(uid: string): Promise<IdentityRecord | undefined>;
  /** Change an identity and set updateTime. Throws `not_found`. */
  updateIdentity(uid: string, patch: IdentityPatch, now: number): Promise<IdentityRecord>;
  /** Delete an identity and every role binding of it. Throws `not_found`. */
  deleteIdentity(uid: string): Promise<void>;
  /**
   * List identities; the tree filters and scope apply to the identity's group, so a person's
   * root identity (no group) matches no tree filter and no scope.
   */
  listIdentities(query: ListQuery): Promise<ListPage<IdentityRecord>>;
  /** Set lastSeenTime (a token exchange). Throws `not_found`. */
  touchIdentity(uid: string, time: number): Promise<void>;
  /**
   * Find the root identity of a person by uid, or create it; on a later login name and email
   * are refreshed and lastSeenTime set. Returns the identity.
   */
  upsertPerson(login: PersonLogin): Promise<IdentityRecord>;

  /**
   * Create an organization: a root group and a binding (`bindingUid`, a direct child of the
   * group's uid) of `identityUid` to `roleUid` (the built-in owner) at it, in one transaction.
   * Throws `not_found` if the identity or role is gone (and creates nothing).
   */
  createOrganization(
    group: { uid: string; name: string; description: string; now: number },
    owner: { bindingUid: string; identityUid: string; roleUid: string },
  ): Promise<GroupRecord>;

  /**
   * Create a custom role. `uid` must be a direct child of `groupUid`. Throws `not_found` if
   * its group does not exist. Every store holds the built-in roles of capabilities.ts, with
   * their capabilities, from the moment it opens.
   */
  createRole(role: NewRole): Promise<RoleRecord>;
  /** Get a role, built-in or custom, or undefined. Capabilities come sorted. */
  getRole(uid: string): Promise<RoleRecord | undefined>;
  /** Change a custom role. Throws `not_found`; `failed_precondition` for a built-in role. */
  updateRole(uid: string, patch: RolePatch, now: number): Promise<RoleRecord>;
  /**
   * Delete a custom role. Throws `not_found`; `failed_precondition` for a built-in role or a
   * role that is still bound.
   */
  deleteRole(uid: string): Promise<void>;
  /**
   * List roles. With a non-empty scope, built-in roles match it, and a custom role matches
   * when its group is at or below a scope group, or above one (a role is usable in its group's
   * subtree); an empty scope matches nothing. Tree filters apply to the role's uid and group,
   * so built-in roles (no group) match none.
   */
  listRoles(query: ListQuery): Promise<ListPage<RoleRecord>>;

  /**
   * Bind a role to an identity, or to a team, at a group (`uid` a direct child of `groupUid`).
   * Throws `not_found` if the group, identity, team or role does not exist; `already_exists`
   * for the same identity (or team), role and group twice. Which identities, teams and roles
   * may be bound where is the service's rule, not the store's.
   */
  createRoleBinding(binding: NewRoleBinding): Promise<RoleBindingRecord>;
  /** Get a hydrated role binding, or undefined. */
  getRoleBinding(uid: string): Promise<RoleBindingRecord | undefined>;
  /**
   * Change the role of a binding, and its expiry when `expireTime` is given (null: until
   * revoked; undefined: unchanged). Throws `not_found`, `already_exists` as createRoleBinding.
   */
  updateRoleBinding(
    uid: string,
    roleUid: string,
    now: number,
    expireTime?: number | null,
  ): Promise<RoleBindingRecord>;
  /** The uids of bindings whose expiry is at or before `now`, oldest expiry first, at most `limit`. */
  expiredRoleBindings(now: number, limit: number): Promise<readonly string[]>;
  /**
   * Delete the binding `uid` if its expiry is at or before `now`: `{ kind: "expired", binding }`
   * (named as it was) when this call deleted it, `{ kind: "absent" }` when it is gone already
   * (another replica's sweep, a revocation) or does not expire by then. The delete decides, so
   * of two replicas sweeping at once exactly one reports each expiry.
   */
  expireRoleBinding(uid: string, now: number): Promise<ExpiredBinding>;
  /**
   * Delete a role binding and return it as it was (its names read in the delete's
   * transaction: what its event says was revoked). Throws `not_found`.
   */
  deleteRoleBinding(uid: string): Promise<RoleBindingRecord>;
  /**
   * List role bindings; the tree filters and scope apply to the binding's group. A binding has
   * no name of its own: the `name` filter and order use its role's name.
   */
  listRoleBindings(query: ListQuery<RoleBindingFilters>): Promise<ListPage<RoleBindingRecord>>;

  /**
   * Create an identity provider (`uid` a direct child of `groupUid`). Throws `not_found` if
   * its group does not exist, `already_exists` if the uid is taken. Whether the default role
   * may be named is the service's rule.
   */
  createIdentityProvider(provider: NewIdentityProvider): Promise<IdentityProviderRecord>;
  /** Get an identity provider, client secret included, or undefined. */
  getIdentityProvider(uid: string): Promise<IdentityProviderRecord | undefined>;
  /** Change an identity provider and set updateTime. Throws `not_found`. */
  updateIdentityProvider(
    uid: string,
    patch: IdentityProviderPatch,
    now: number,
  ): Promise<IdentityProviderRecord>;
  /** Delete an identity provider. Throws `not_found`. */
  deleteIdentityProvider(uid: string): Promise<void>;
  /** List identity providers; tree filters and scope apply to the provider's group. */
  listIdentityProviders(query: ListQuery): Promise<ListPage<IdentityProviderRecord>>;
  /** How many identity providers the organization `root` (a root uid) has, in all its groups. */
  countIdentityProviders(root: string): Promise<number>;
  /**
   * The providers that declare `domain` (lowercase), for the sign-in page: DNS-verified claims
   * first, then the oldest claims (when the provider declared the domain, not its age; equal
   * times by uid), at most `perOrganization` of one organization and `limit` in all: neither
   * a later declaration nor one organization's many can push an earlier claim out.
   */
  findIdentityProvidersByDomain(
    domain: string,
    limit: number,
    perOrganization: number,
  ): Promise<SignInProviderMatch[]>;
  /**
   * Unverified domain claims last checked at or before `checkedBefore` (never: 0), the least
   * recently checked first, at most `limit`: what the DNS verification checks next.
   */
  domainClaimsToCheck(
    checkedBefore: number,
    limit: number,
  ): Promise<{ domain: string; providerUid: string }[]>;
  /**
   * Record that the claim of `domain` by `providerUid` was checked at `now`, and verified if
   * `verified` (from then on it stays verified while the provider declares the domain). A
   * claim gone or already verified is left as it is.
   */
  recordDomainCheck(
    domain: string,
    providerUid: string,
    now: number,
    verified: boolean,
  ): Promise<void>;
  /**
   * The providers named exactly `name`, as findIdentityProvidersByDomain orders and caps them:
   * the oldest claims of the name first (when the provider took it), never verified.
   */
  findIdentityProvidersByName(
    name: string,
    limit: number,
    perOrganization: number,
  ): Promise<SignInProviderMatch[]>;

  /**
   * Create the account association of the group `uid`. Throws `not_found` if the group does
   * not exist, `already_exists` if it has one. Deleted with its group.
   */
  createAccountAssociation(association: NewAccountAssociation): Promise<AccountAssociationRecord>;
  /** Get the account association of a group, or undefined. */
  getAccountAssociation(uid: string): Promise<AccountAssociationRecord | undefined>;
  /** Change an account association and set updateTime. Throws `not_found`. */
  updateAccountAssociation(
    uid: string,
    patch: AccountAssociationPatch,
    now: number,
  ): Promise<AccountAssociationRecord>;
  /** Delete an account association. Throws `not_found`. */
  deleteAccountAssociation(uid: string): Promise<void>;
  /**
   * List account associations. An association belongs to the group of its uid: `childrenOf G`
   * and `descendantsOf G` both match G's own, and scope applies to that group.
   */
  listAccountAssociations(query: ListQuery): Promise<ListPage<AccountAssociationRecord>>;

  /*
   * The access queries, asked on every authenticated call. Their answers may be shared
   * between callers (a store may cache them while its data is unchanged), hence read-only.
   */

  /** Whether an identity with this uid exists. */
  identityExists(uid: string): Promise<boolean>;
  /**
   * Every capability the identity holds through bindings at any of `groupUids` (the caller
   * passes a resource's group and its ancestors: the prefixes of its uid): its own bindings
   * and those of the teams it is a member of. One indexed query.
   */
  capabilitiesAt(identityUid: string, groupUids: readonly string[]): Promise<ReadonlySet<string>>;
  /**
   * The groups where the identity, or a team it is a member of, is bound to a role that holds
   * `capability`.
   */
  groupsWithCapability(identityUid: string, capability: string): Promise<readonly string[]>;
}
