import type { Capability } from "./capabilities.js";

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
 */
export type Rule =
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
      capability: Capability;
      target: string;
      root?: "person";
      role?: "read" | "write";
      self?: true;
      selfField?: string;
    }
  | { kind: "list"; capability: Capability }
  | { kind: "adapter"; calls: readonly string[] };

const crud = (
  service: string,
  singular: string,
  plural: string,
  cap: string,
  resourceField: string,
): Record<string, Rule> => ({
  [`${service}/List${plural}`]: { kind: "list", capability: `${cap}.list` as Capability },
  [`${service}/Get${singular}`]: {
    kind: "resource",
    capability: `${cap}.list` as Capability,
    target: "uid",
  },
  [`${service}/Create${singular}`]: {
    kind: "resource",
    capability: `${cap}.create` as Capability,
    target: "parent",
  },
  [`${service}/Update${singular}`]: {
    kind: "resource",
    capability: `${cap}.update` as Capability,
    target: `${resourceField}.uid`,
  },
  [`${service}/Delete${singular}`]: {
    kind: "resource",
    capability: `${cap}.delete` as Capability,
    target: "uid",
  },
});

const iam = "gatehouse.iam.v2beta1";

/**
 * The rules of a v1 CRUD service whose methods adapt the v2 service's: Create calls Create,
 * Update calls Update, Delete calls Delete, and List calls List, or Get for a List by id.
 * `extra` adds v2 calls a method also makes (hydrating a read shape, for example).
 */
const v1crud = (
  v1Service: string,
  v2Service: string,
  singular: string,
  plural: string,
  extra: Record<string, readonly string[]> = {},
): Record<string, Rule> => {
  const v2 = (m: string) => `${v2Service}/${m}`;
  const rules: Record<string, readonly string[]> = {
    Create: [v2(`Create${singular}`)],
    Update: [v2(`Update${singular}`)],
    List: [v2(`List${plural}`), v2(`Get${singular}`)],
    Delete: [v2(`Delete${singular}`)],
  };
  const out: Record<string, Rule> = {};
  for (const [m, calls] of Object.entries(rules)) {
    out[`${v1Service}/${m}`] = { kind: "adapter", calls: [...calls, ...(extra[m] ?? [])] };
  }
  return out;
};

const iamV1 = "gatehouse.iam.v1";

const repos = "gatehouse.registry.v2beta1.ReposService";
const tags = "gatehouse.registry.v2beta1.TagsService";
const registryV1 = "gatehouse.registry.v1.RegistryService";
/** v1's one registry service: repos and tags, over the two v2 services. */
const v1Registry: Record<string, Rule> = {
  // Create or replace: a name taken in the group makes it an update of that repo.
  [`${registryV1}/CreateRepo`]: {
    kind: "adapter",
    calls: [`${repos}/CreateRepo`, `${repos}/ListRepos`, `${repos}/UpdateRepo`],
  },
  [`${registryV1}/UpdateRepo`]: { kind: "adapter", calls: [`${repos}/UpdateRepo`] },
  [`${registryV1}/ListRepos`]: {
    kind: "adapter",
    calls: [`${repos}/ListRepos`, `${repos}/GetRepo`],
  },
  [`${registryV1}/DeleteRepo`]: { kind: "adapter", calls: [`${repos}/DeleteRepo`] },
  [`${registryV1}/CreateTag`]: { kind: "adapter", calls: [`${tags}/CreateTag`] },
  // v2 has no tag Update: reading the tag and creating it again under its name moves it.
  [`${registryV1}/UpdateTag`]: { kind: "adapter", calls: [`${tags}/GetTag`, `${tags}/CreateTag`] },
  [`${registryV1}/DeleteTag`]: { kind: "adapter", calls: [`${tags}/DeleteTag`] },
  [`${registryV1}/ListTags`]: { kind: "adapter", calls: [`${tags}/ListTags`, `${tags}/GetTag`] },
};

/**
 * The authorization table: the one place that names what every RPC needs. The server refuses
 * to start if it serves an RPC missing here, and denies any call it was not told about.
 */
export const policy: Readonly<Record<string, Rule>> = {
  ...crud(`${iam}.GroupsService`, "Group", "Groups", "groups", "group"),
  [`${iam}.GroupsService/CreateGroup`]: {
    kind: "resource",
    capability: "groups.create",
    target: "parent",
    root: "person",
  },
  ...crud(`${iam}.IdentitiesService`, "Identity", "Identities", "identities", "identity"),
  [`${iam}.IdentitiesService/GetIdentity`]: {
    kind: "resource",
    capability: "identities.list",
    target: "uid",
    self: true,
  },
  ...crud(`${iam}.RolesService`, "Role", "Roles", "roles", "role"),
  [`${iam}.RolesService/GetRole`]: {
    kind: "resource",
    capability: "roles.list",
    target: "uid",
    role: "read",
  },
  [`${iam}.RolesService/UpdateRole`]: {
    kind: "resource",
    capability: "roles.update",
    target: "role.uid",
    role: "write",
  },
  [`${iam}.RolesService/DeleteRole`]: {
    kind: "resource",
    capability: "roles.delete",
    target: "uid",
    role: "write",
  },
  ...crud(
    `${iam}.RoleBindingsService`,
    "RoleBinding",
    "RoleBindings",
    "role_bindings",
    "role_binding",
  ),
  ...crud(
    `${iam}.IdentityProvidersService`,
    "IdentityProvider",
    "IdentityProviders",
    "identity_providers",
    "identity_provider",
  ),
  ...crud(
    `${iam}.AccountAssociationsService`,
    "AccountAssociation",
    "AccountAssociations",
    "account_associations",
    "account_association",
  ),
  ...crud(
    `${iam}.GroupInvitesService`,
    "GroupInvite",
    "GroupInvites",
    "group_invites",
    "group_invite",
  ),
  [`${iam}.GroupInvitesService/RedeemGroupInvite`]: { kind: "authenticated" },
  // Who am I: any caller, about itself only.
  [`${iam}.CallerService/GetCaller`]: { kind: "authenticated" },
  // Explaining another identity's access at a group shows its bindings there: the same
  // capability as listing them. About oneself: nothing, as GetCaller.
  [`${iam}.AccessService/CheckAccess`]: {
    kind: "resource",
    capability: "role_bindings.list",
    target: "group_uid",
    selfField: "identity_uid",
  },
  // The caller's own capabilities at a group: empty at any group of another organization.
  [`${iam}.AccessService/ListCallerCapabilities`]: { kind: "authenticated" },
  ...crud("gatehouse.registry.v2beta1.ReposService", "Repo", "Repos", "repo", "repo"),
  ...crud("gatehouse.registry.v2beta1.TagsService", "Tag", "Tags", "tag", "tag"),
  ...crud(
    "gatehouse.vulnerabilities.v2beta1.AdvisoriesService",
    "Advisory",
    "Advisories",
    "advisories",
    "advisory",
  ),
  // v1: adapters over the v2 services above (docs/v1-migration.md).
  ...v1crud(`${iamV1}.GroupsService`, `${iam}.GroupsService`, "Group", "Groups"),
  ...v1crud(`${iamV1}.IdentitiesService`, `${iam}.IdentitiesService`, "Identity", "Identities"),
  ...v1crud(`${iamV1}.RolesService`, `${iam}.RolesService`, "Role", "Roles"),
  ...v1crud(
    `${iamV1}.RoleBindingsService`,
    `${iam}.RoleBindingsService`,
    "RoleBinding",
    "RoleBindings",
    // The read shape carries the whole group and role, where the caller may read them.
    { List: [`${iam}.GroupsService/GetGroup`, `${iam}.RolesService/GetRole`] },
  ),
  [`${iamV1}.RoleBindingsService/CreateBatch`]: {
    kind: "adapter",
    calls: [`${iam}.RoleBindingsService/CreateRoleBinding`],
  },
  ...v1crud(
    `${iamV1}.IdentityProvidersService`,
    `${iam}.IdentityProvidersService`,
    "IdentityProvider",
    "IdentityProviders",
  ),
  ...v1crud(
    `${iamV1}.GroupAccountAssociationsService`,
    `${iam}.AccountAssociationsService`,
    "AccountAssociation",
    "AccountAssociations",
  ),
  ...v1Registry,
  ...v1crud(
    "gatehouse.vulnerabilities.v1.AdvisoriesService",
    "gatehouse.vulnerabilities.v2beta1.AdvisoriesService",
    "Advisory",
    "Advisories",
  ),
  // v1 invites have no Update; their role is shown whole where the caller may read it.
  [`${iamV1}.GroupInvitesService/Create`]: {
    kind: "adapter",
    calls: [`${iam}.GroupInvitesService/CreateGroupInvite`, `${iam}.RolesService/GetRole`],
  },
  [`${iamV1}.GroupInvitesService/List`]: {
    kind: "adapter",
    calls: [
      `${iam}.GroupInvitesService/ListGroupInvites`,
      `${iam}.GroupInvitesService/GetGroupInvite`,
      `${iam}.RolesService/GetRole`,
    ],
  },
  [`${iamV1}.GroupInvitesService/Delete`]: {
    kind: "adapter",
    calls: [`${iam}.GroupInvitesService/DeleteGroupInvite`],
  },
  "gatehouse.sts.v1.SecurityTokenService/Exchange": { kind: "public" },
  // The audit trail: only under the groups where the caller holds events.list (owners).
  "gatehouse.events.v2beta1.EventsService/ListEvents": { kind: "list", capability: "events.list" },
  // Health checks and the API's shape are public; its data is not.
  "grpc.health.v1.Health/Check": { kind: "public" },
  // A watcher with a token gets a slot that anonymous watchers cannot take (health.ts).
  "grpc.health.v1.Health/Watch": { kind: "public", identifies: true },
  "grpc.reflection.v1.ServerReflection/ServerReflectionInfo": { kind: "public" },
  "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo": { kind: "public" },
};

/** The rule of an RPC (`package.Service/Method`), or undefined: deny. */
export function ruleOf(rpc: string): Rule | undefined {
  return policy[rpc];
}
