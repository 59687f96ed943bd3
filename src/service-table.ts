// Runtime imports: generated descriptors only. The web console bundles this table (its client
// map and the capability catalog come from it), so no server code may be imported here; the
// implementations are paired with these entries in src/service-impls.ts.
import type { DescService } from "@bufbuild/protobuf";
import { EventsService } from "../gen/gatehouse/events/v2beta1/events_pb.js";
import { GroupAccountAssociationsService as V1AccountAssociationsService } from "../gen/gatehouse/iam/v1/account_associations_pb.js";
import { GroupInvitesService as V1GroupInvitesService } from "../gen/gatehouse/iam/v1/group_invites_pb.js";
import { GroupsService as V1GroupsService } from "../gen/gatehouse/iam/v1/groups_pb.js";
import { IdentitiesService as V1IdentitiesService } from "../gen/gatehouse/iam/v1/identities_pb.js";
import { IdentityProvidersService as V1IdentityProvidersService } from "../gen/gatehouse/iam/v1/identity_providers_pb.js";
import { RoleBindingsService as V1RoleBindingsService } from "../gen/gatehouse/iam/v1/role_bindings_pb.js";
import { RolesService as V1RolesService } from "../gen/gatehouse/iam/v1/roles_pb.js";
import { AccessService } from "../gen/gatehouse/iam/v2beta1/access_pb.js";
import { AccessRequestsService } from "../gen/gatehouse/iam/v2beta1/access_requests_pb.js";
import { AccountAssociationsService } from "../gen/gatehouse/iam/v2beta1/account_associations_pb.js";
import { CallerService } from "../gen/gatehouse/iam/v2beta1/caller_pb.js";
import { GroupInvitesService } from "../gen/gatehouse/iam/v2beta1/group_invites_pb.js";
import { GroupsService } from "../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../gen/gatehouse/iam/v2beta1/identities_pb.js";
import { IdentityProvidersService } from "../gen/gatehouse/iam/v2beta1/identity_providers_pb.js";
import { PeopleService } from "../gen/gatehouse/iam/v2beta1/people_pb.js";
import { RoleBindingsService } from "../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import { RolesService } from "../gen/gatehouse/iam/v2beta1/roles_pb.js";
import { ScimService } from "../gen/gatehouse/iam/v2beta1/scim_pb.js";
import { TeamsService } from "../gen/gatehouse/iam/v2beta1/teams_pb.js";
import { RegistryService as V1RegistryService } from "../gen/gatehouse/registry/v1/registry_pb.js";
import { ReposService } from "../gen/gatehouse/registry/v2beta1/repos_pb.js";
import { TagsService } from "../gen/gatehouse/registry/v2beta1/tags_pb.js";
import { SecurityTokenService } from "../gen/gatehouse/sts/v1/sts_pb.js";
import { AdvisoriesService as V1AdvisoriesService } from "../gen/gatehouse/vulnerabilities/v1/advisories_pb.js";
import { AdvisoriesService } from "../gen/gatehouse/vulnerabilities/v2beta1/advisories_pb.js";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import { ServerReflection } from "../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionAlpha } from "../gen/grpc/reflection/v1alpha/reflection_pb.js";
import type { Rule } from "./auth/rule.js";

/** A CRUD verb: the second half of a capability (`groups.list`). */
export type Verb = "list" | "create" | "update" | "delete";

/** A method of a service by its proto name (`GetGroup`), as the compiler knows them. */
export type MethodName<S extends DescService> = Capitalize<keyof S["method"] & string>;

/** The capabilities of one resource (see ServiceEntry.capabilities). */
export interface CapabilityBlock {
  readonly kind: string;
  readonly verbs: readonly Verb[];
  readonly also?: readonly string[];
  readonly viewers?: false;
  readonly ownerWrites?: false;
}

/**
 * Where a service is on the command line: a resource is `gatehouse <group> <command>
 * list|get|...` (command "" puts the verbs on the group itself; `noun` picks the resource of a
 * service that has two, else its first List's); a service of other RPCs names a command per
 * method (`actions`, command to method), whose help and output src/cli/remote must describe.
 */
export type CliPlace =
  | { readonly group: string; readonly command: string; readonly noun?: string }
  | { readonly group: string; readonly actions: Readonly<Record<string, string>> };

/** Something a service is deliberately left out of, and why (the reason is shown in tests). */
export interface Not {
  readonly none: string;
}

/**
 * ServiceEntry is everything about one served service that used to be listed by hand in a
 * dozen places. Each field is required unless the compiler can tell it is not needed, so a
 * new entry cannot skip a decision: where an answer is "not there", it says why (`Not`).
 */
export interface ServiceEntry {
  /** The generated descriptor: the RPCs, their messages and their REST bindings. */
  readonly service: DescService;
  /**
   * The capabilities this service adds to the catalog, `<kind>.<verb>` in this order, then
   * `also`; a service of two resources has a block for each. `viewers: false` keeps its reads
   * from the viewer and editor roles (the audit trail is the owners'); `ownerWrites: false`
   * keeps its writes from the owner role (a role of their own holds them). Capabilities are
   * derived, never typed in twice.
   */
  readonly capabilities?: readonly CapabilityBlock[];
  /** What each RPC needs, by method name. Every method needs a rule, or the server stops. */
  readonly rules: Readonly<Record<string, Rule<string>>>;
  /**
   * A v1 adapter over the v2 implementations: created after them, and its REST paths ignore
   * unknown query keys and body fields, as v1's gateway did.
   */
  readonly adapter?: true;
  /** The store operations its handlers call; the store suites must exercise each. */
  readonly store: readonly string[] | Not;
  /** Its command line: one place, one per resource it holds, or none and why. */
  readonly cli: CliPlace | readonly CliPlace[] | Not;
  /** Its key in the web console's client map (console/src/api.ts). */
  readonly console: string | Not;
  /** The cross-organization matrix (test/iam/cross-org-matrix.test.ts) has a row per RPC. */
  readonly matrix: true | Not;
}

const crudVerbs = ["list", "create", "update", "delete"] as const satisfies readonly Verb[];

/**
 * The rules of a v2 resource service's standard methods: List needs `<kind>.list` somewhere,
 * Get `<kind>.list` at the resource, Create `<kind>.create` at the parent, Update and Delete
 * theirs at the resource (`field` is the request field holding the resource on Update). Only
 * the verbs given get rules: a method left out has none, and the server refuses to start.
 * `noun` picks the resource of a service that holds two (default: its first List's).
 */
function crud<const K extends string, const V extends Verb = (typeof crudVerbs)[number]>(
  service: DescService,
  kind: K,
  field: string,
  opts: { verbs?: readonly V[]; noun?: string } = {},
): Record<string, Rule<`${K}.${V}`>> {
  const verbs = opts.verbs ?? (crudVerbs as unknown as readonly V[]);
  const items = service.methods.find((m) => m.name.startsWith(`List${opts.noun ?? ""}`));
  if (!items) throw new Error(`${service.typeName}: a CRUD service has a List method`);
  const plural = items.name.slice("List".length);
  const get = service.methods.find((m) => m.name.startsWith(`Get${opts.noun ?? ""}`));
  const noun = opts.noun ?? get?.name.slice("Get".length) ?? "";
  const cap = <W extends V>(verb: W) => `${kind}.${verb}` as `${K}.${W}`;
  const rules: Record<string, Rule<`${K}.${V}`>> = {};
  for (const verb of verbs) {
    if (verb === "list") {
      rules[`List${plural}`] = { kind: "list", capability: cap(verb) };
      rules[`Get${noun}`] = { kind: "resource", capability: cap(verb), target: "uid" };
    } else if (verb === "create") {
      rules[`Create${noun}`] = { kind: "resource", capability: cap(verb), target: "parent" };
    } else if (verb === "update") {
      rules[`Update${noun}`] = { kind: "resource", capability: cap(verb), target: `${field}.uid` };
    } else {
      rules[`Delete${noun}`] = { kind: "resource", capability: cap(verb), target: "uid" };
    }
  }
  return rules;
}

/** `package.Service/Method`: an RPC of a served service, its name checked by the compiler. */
function rpc<S extends DescService>(service: S, method: MethodName<S>): string {
  return `${service.typeName}/${method}`;
}

/**
 * The rules of a v1 CRUD service whose methods adapt the v2 service's: Create calls Create,
 * Update calls Update, Delete calls Delete, and List calls List, or Get for a List by id.
 * `extra` adds v2 calls a method also makes (hydrating a read shape, for example).
 */
function v1crud<S extends DescService>(
  v2: S,
  noun: string,
  plural: string,
  extra: Partial<Record<"Create" | "Update" | "List" | "Delete", readonly string[]>> = {},
): Record<string, Rule<never>> {
  const call = (m: string) => rpc(v2, m as MethodName<S>);
  const calls: Record<string, readonly string[]> = {
    Create: [call(`Create${noun}`)],
    Update: [call(`Update${noun}`)],
    List: [call(`List${plural}`), call(`Get${noun}`)],
    Delete: [call(`Delete${noun}`)],
  };
  const out: Record<string, Rule<never>> = {};
  for (const [m, c] of Object.entries(calls)) {
    out[m] = { kind: "adapter", calls: [...c, ...(extra[m as keyof typeof extra] ?? [])] };
  }
  return out;
}

// Why a service has no command, console client, row or store operations of its own.
const v1Only: Not = { none: "v1 serves v1's clients; the CLI and the console speak v2" };
const v1Adapter: Not = { none: "an adapter: its v2 calls use the v2 store operations" };

/**
 * The service table: one entry per served API service, in the order the API lists them.
 * Served services, health and reflection lists, the authorization policy, the capability
 * catalog, the built-in roles' derived powers, the CLI's resource commands, the console's
 * client map and the tests' coverage lists all come from here (docs/adding-a-resource.md).
 */
export const serviceTable = {
  groups: {
    service: GroupsService,
    capabilities: [{ kind: "groups", verbs: crudVerbs }],
    rules: {
      ...crud(GroupsService, "groups", "group"),
      CreateGroup: {
        kind: "resource",
        capability: "groups.create",
        target: "parent",
        root: "person",
      },
    },
    store: [
      "listGroups",
      "getGroup",
      "createGroup",
      "createOrganization",
      "updateGroup",
      "deleteGroup",
    ],
    cli: { group: "iam", command: "groups" },
    console: "groups",
    matrix: true,
  },
  identities: {
    service: IdentitiesService,
    capabilities: [{ kind: "identities", verbs: crudVerbs }],
    rules: {
      ...crud(IdentitiesService, "identities", "identity"),
      GetIdentity: { kind: "resource", capability: "identities.list", target: "uid", self: true },
    },
    store: ["listIdentities", "getIdentity", "createIdentity", "updateIdentity", "deleteIdentity"],
    cli: { group: "iam", command: "identities" },
    console: "identities",
    matrix: true,
  },
  roles: {
    service: RolesService,
    capabilities: [{ kind: "roles", verbs: crudVerbs }],
    rules: {
      ...crud(RolesService, "roles", "role"),
      GetRole: { kind: "resource", capability: "roles.list", target: "uid", role: "read" },
      UpdateRole: {
        kind: "resource",
        capability: "roles.update",
        target: "role.uid",
        role: "write",
      },
      DeleteRole: { kind: "resource", capability: "roles.delete", target: "uid", role: "write" },
    },
    store: ["listRoles", "getRole", "createRole", "updateRole", "deleteRole"],
    cli: { group: "iam", command: "roles" },
    console: "roles",
    matrix: true,
  },
  roleBindings: {
    service: RoleBindingsService,
    capabilities: [{ kind: "role_bindings", verbs: crudVerbs }],
    rules: {
      ...crud(RoleBindingsService, "role_bindings", "role_binding"),
      // Every binding of a batch lives at its parent: the batch needs what one Create needs.
      BatchCreateRoleBindings: {
        kind: "resource",
        capability: "role_bindings.create",
        target: "parent",
      },
    },
    store: [
      "listRoleBindings",
      "getRoleBinding",
      "createRoleBinding",
      "updateRoleBinding",
      "deleteRoleBinding",
    ],
    cli: [
      { group: "iam", command: "role-bindings" },
      { group: "iam", actions: { "bind-batch": "BatchCreateRoleBindings" } },
    ],
    console: "bindings",
    matrix: true,
  },
  teams: {
    service: TeamsService,
    capabilities: [{ kind: "teams", verbs: crudVerbs }],
    rules: {
      ...crud(TeamsService, "teams", "team"),
      // Membership is the team's to change: adding a member also needs what the team holds
      // (the handler's escalation check), removing one only takes access away.
      AddTeamMembers: { kind: "resource", capability: "teams.update", target: "uid" },
      RemoveTeamMembers: { kind: "resource", capability: "teams.update", target: "uid" },
      ListTeamMembers: { kind: "resource", capability: "teams.list", target: "uid" },
    },
    store: [
      "listTeams",
      "getTeam",
      "createTeam",
      "updateTeam",
      "deleteTeam",
      "addTeamMembers",
      "removeTeamMembers",
      "listTeamMembers",
      "teamsOfIdentity",
    ],
    cli: [
      { group: "iam", command: "teams" },
      {
        group: "iam",
        actions: {
          "team-add-members": "AddTeamMembers",
          "team-remove-members": "RemoveTeamMembers",
          "team-members": "ListTeamMembers",
        },
      },
    ],
    console: "teams",
    matrix: true,
  },
  identityProviders: {
    service: IdentityProvidersService,
    capabilities: [{ kind: "identity_providers", verbs: crudVerbs }],
    rules: crud(IdentityProvidersService, "identity_providers", "identity_provider"),
    store: [
      "listIdentityProviders",
      "getIdentityProvider",
      "countIdentityProviders",
      "createIdentityProvider",
      "updateIdentityProvider",
      "deleteIdentityProvider",
    ],
    cli: { group: "iam", command: "identity-providers" },
    console: "providers",
    matrix: true,
  },
  scim: {
    service: ScimService,
    // An organization's directory provisions its people: whoever may change how they sign in
    // (its identity providers) may connect it. At the organization only (the handler refuses
    // any other group).
    rules: {
      CreateScimToken: { kind: "resource", capability: "identity_providers.update", target: "org" },
      GetScimConnection: { kind: "resource", capability: "identity_providers.list", target: "org" },
      DeleteScimToken: { kind: "resource", capability: "identity_providers.update", target: "org" },
    },
    store: ["putScimConnection", "getScimConnection", "deleteScimConnection"],
    cli: {
      group: "scim",
      actions: {
        "token create": "CreateScimToken",
        "token rotate": "CreateScimToken",
        "token revoke": "DeleteScimToken",
        connection: "GetScimConnection",
      },
    },
    console: "scim",
    matrix: true,
  },
  accountAssociations: {
    service: AccountAssociationsService,
    capabilities: [{ kind: "account_associations", verbs: crudVerbs }],
    rules: crud(AccountAssociationsService, "account_associations", "account_association"),
    store: [
      "listAccountAssociations",
      "getAccountAssociation",
      "createAccountAssociation",
      "updateAccountAssociation",
      "deleteAccountAssociation",
    ],
    cli: { group: "iam", command: "account-associations" },
    console: "accounts",
    matrix: true,
  },
  groupInvites: {
    service: GroupInvitesService,
    capabilities: [{ kind: "group_invites", verbs: crudVerbs }],
    rules: {
      ...crud(GroupInvitesService, "group_invites", "group_invite"),
      RedeemGroupInvite: { kind: "authenticated" },
    },
    store: [
      "listGroupInvites",
      "getGroupInvite",
      "findGroupInviteByCode",
      "createGroupInvite",
      "updateGroupInvite",
      "redeemGroupInvite",
      "deleteGroupInvite",
    ],
    cli: { group: "iam", command: "invites" },
    console: "invites",
    matrix: true,
  },
  people: {
    service: PeopleService,
    // The people of a group's subtree with their verified emails and sessions: the owners'
    // (people.list to read, people.update to end sessions), never the viewers' or editors'.
    capabilities: [{ kind: "people", verbs: ["list", "update"], viewers: false }],
    rules: {
      ListPeople: { kind: "resource", capability: "people.list", target: "group_uid" },
      GetPerson: { kind: "resource", capability: "people.list", target: "group_uid" },
      ListPersonSessions: { kind: "resource", capability: "people.list", target: "group_uid" },
      RevokePersonSessions: { kind: "resource", capability: "people.update", target: "group_uid" },
    },
    store: [
      "listPeople",
      "getPerson",
      "listRoleBindings",
      "listIdentityProviders",
      "listPersonSessions",
      "revokePersonSessions",
    ],
    cli: {
      group: "iam",
      actions: {
        people: "ListPeople",
        person: "GetPerson",
        "person-sessions": "ListPersonSessions",
        "end-sessions": "RevokePersonSessions",
      },
    },
    console: "people",
    matrix: true,
  },
  accessRequests: {
    service: AccessRequestsService,
    // No capability of its own: asking needs sight of the group; answering is granting, so it
    // needs role_bindings.create there (and the handler checks the role's capabilities).
    rules: {
      ListAccessRequests: { kind: "list", capability: "role_bindings.create" },
      // Its requester, or whoever may answer it: the handler decides, with one refusal for a
      // request that does not exist and one the caller may not see.
      GetAccessRequest: { kind: "authenticated" },
      CreateAccessRequest: { kind: "resource", capability: "groups.list", target: "parent" },
      ApproveAccessRequest: {
        kind: "resource",
        capability: "role_bindings.create",
        target: "uid",
      },
      DenyAccessRequest: { kind: "resource", capability: "role_bindings.create", target: "uid" },
    },
    store: [
      "listAccessRequests",
      "getAccessRequest",
      "createAccessRequest",
      "decideAccessRequest",
      "lapsedAccessRequests",
      "expireAccessRequest",
    ],
    cli: { group: "iam", command: "access-requests" },
    console: "accessRequests",
    matrix: true,
  },
  caller: {
    service: CallerService,
    // Who am I: any caller, about itself only.
    rules: { GetCaller: { kind: "authenticated" } },
    store: ["getIdentity", "listRoleBindings"],
    cli: { none: "gatehouse auth status shows who the token is" },
    console: "caller",
    matrix: { none: "it answers about the caller alone: nothing of another organization" },
  },
  access: {
    service: AccessService,
    rules: {
      // Explaining another identity's access at a group shows its bindings there: the same
      // capability as listing them. About oneself: nothing, as GetCaller.
      CheckAccess: {
        kind: "resource",
        capability: "role_bindings.list",
        target: "group_uid",
        selfField: "identity_uid",
      },
      // The caller's own capabilities at a group: empty at any group of another organization.
      ListCallerCapabilities: { kind: "authenticated" },
    },
    store: ["getRole", "listRoleBindings", "capabilitiesAt"],
    // Its two RPCs are commands of the iam group, not a resource's verbs.
    cli: {
      group: "iam",
      actions: { "check-access": "CheckAccess", capabilities: "ListCallerCapabilities" },
    },
    console: "access",
    matrix: true,
  },
  repos: {
    service: ReposService,
    capabilities: [{ kind: "repo", verbs: crudVerbs }],
    rules: crud(ReposService, "repo", "repo"),
    store: ["listRepos", "getRepo", "createRepo", "updateRepo", "deleteRepo"],
    cli: { group: "registry", command: "repos" },
    console: "repos",
    matrix: true,
  },
  tags: {
    service: TagsService,
    // No update: creating an existing tag moves it. Pulling and pushing images through the
    // registry's token service are capabilities of their own.
    capabilities: [
      {
        kind: "tag",
        verbs: ["list", "create", "delete"],
        also: ["registry.pull", "registry.push"],
      },
    ],
    rules: crud(TagsService, "tag", "tag", { verbs: ["list", "create", "delete"] }),
    store: ["listTags", "getTag", "putTag", "deleteTag"],
    cli: { group: "registry", command: "tags" },
    console: "tags",
    matrix: true,
  },
  advisories: {
    service: AdvisoriesService,
    // Only advisories.admin writes advisories: the owner role leaves the writes out.
    capabilities: [{ kind: "advisories", verbs: crudVerbs, ownerWrites: false }],
    rules: crud(AdvisoriesService, "advisories", "advisory"),
    store: ["listAdvisories", "getAdvisory", "createAdvisory", "updateAdvisory", "deleteAdvisory"],
    cli: { group: "advisories", command: "" },
    console: "advisories",
    matrix: true,
  },
  sts: {
    service: SecurityTokenService,
    rules: { Exchange: { kind: "public" } },
    store: ["touchIdentity", "upsertPerson"],
    cli: { none: "gatehouse auth token exchanges through the OAuth endpoints" },
    console: { none: "people sign in to the console through OAuth, not the exchange" },
    matrix: { none: "it needs an issuer's token: test/sts/exchange.test.ts checks it" },
  },
  v1Groups: {
    service: V1GroupsService,
    rules: {
      ...v1crud(GroupsService, "Group", "Groups"),
      // The caller's organization: a List of the roots the caller may list.
      LookupGroup: { kind: "adapter", calls: [rpc(GroupsService, "ListGroups")] },
      // A v2 access request at the group, with v1's defaults (viewer, 8 h).
      RequestGroupAccess: {
        kind: "adapter",
        calls: [rpc(AccessRequestsService, "CreateAccessRequest")],
      },
    },
    adapter: true,
    store: v1Adapter,
    cli: v1Only,
    console: v1Only,
    matrix: true,
  },
  v1Identities: {
    service: V1IdentitiesService,
    rules: {
      ...v1crud(IdentitiesService, "Identity", "Identities"),
      // Only what those v2 calls show the caller: itself, its listable identities, and the
      // people bound where it may list bindings.
      Lookup: {
        kind: "adapter",
        calls: [
          rpc(IdentitiesService, "GetIdentity"),
          rpc(IdentitiesService, "ListIdentities"),
          rpc(RoleBindingsService, "ListRoleBindings"),
        ],
      },
    },
    adapter: true,
    store: v1Adapter,
    cli: v1Only,
    console: v1Only,
    matrix: true,
  },
  v1Roles: {
    service: V1RolesService,
    rules: v1crud(RolesService, "Role", "Roles"),
    adapter: true,
    store: v1Adapter,
    cli: v1Only,
    console: v1Only,
    matrix: true,
  },
  v1RoleBindings: {
    service: V1RoleBindingsService,
    rules: {
      // The read shape carries the whole group and role, where the caller may read them.
      ...v1crud(RoleBindingsService, "RoleBinding", "RoleBindings", {
        List: [rpc(GroupsService, "GetGroup"), rpc(RolesService, "GetRole")],
      }),
      CreateBatch: {
        kind: "adapter",
        calls: [rpc(RoleBindingsService, "BatchCreateRoleBindings")],
      },
    },
    adapter: true,
    store: v1Adapter,
    cli: v1Only,
    console: v1Only,
    matrix: true,
  },
  v1IdentityProviders: {
    service: V1IdentityProvidersService,
    rules: v1crud(IdentityProvidersService, "IdentityProvider", "IdentityProviders"),
    adapter: true,
    store: v1Adapter,
    cli: v1Only,
    console: v1Only,
    matrix: true,
  },
  v1AccountAssociations: {
    service: V1AccountAssociationsService,
    rules: v1crud(AccountAssociationsService, "AccountAssociation", "AccountAssociations"),
    adapter: true,
    store: v1Adapter,
    cli: v1Only,
    console: v1Only,
    matrix: true,
  },
  v1GroupInvites: {
    service: V1GroupInvitesService,
    // v1 invites have no Update; their role is shown whole where the caller may read it.
    rules: {
      Create: {
        kind: "adapter",
        calls: [rpc(GroupInvitesService, "CreateGroupInvite"), rpc(RolesService, "GetRole")],
      },
      List: {
        kind: "adapter",
        calls: [
          rpc(GroupInvitesService, "ListGroupInvites"),
          rpc(GroupInvitesService, "GetGroupInvite"),
          rpc(RolesService, "GetRole"),
        ],
      },
      Delete: { kind: "adapter", calls: [rpc(GroupInvitesService, "DeleteGroupInvite")] },
    },
    adapter: true,
    store: v1Adapter,
    cli: v1Only,
    console: v1Only,
    matrix: true,
  },
  v1Registry: {
    service: V1RegistryService,
    // v1's one registry service: repos and tags, over the two v2 services.
    rules: {
      // Create or replace: a name taken in the group makes it an update of that repo.
      CreateRepo: {
        kind: "adapter",
        calls: [
          rpc(ReposService, "CreateRepo"),
          rpc(ReposService, "ListRepos"),
          rpc(ReposService, "UpdateRepo"),
        ],
      },
      UpdateRepo: { kind: "adapter", calls: [rpc(ReposService, "UpdateRepo")] },
      ListRepos: {
        kind: "adapter",
        calls: [rpc(ReposService, "ListRepos"), rpc(ReposService, "GetRepo")],
      },
      DeleteRepo: { kind: "adapter", calls: [rpc(ReposService, "DeleteRepo")] },
      CreateTag: { kind: "adapter", calls: [rpc(TagsService, "CreateTag")] },
      // v2 has no tag Update: reading the tag and creating it again under its name moves it.
      UpdateTag: {
        kind: "adapter",
        calls: [rpc(TagsService, "GetTag"), rpc(TagsService, "CreateTag")],
      },
      DeleteTag: { kind: "adapter", calls: [rpc(TagsService, "DeleteTag")] },
      ListTags: {
        kind: "adapter",
        calls: [rpc(TagsService, "ListTags"), rpc(TagsService, "GetTag")],
      },
    },
    adapter: true,
    store: v1Adapter,
    cli: v1Only,
    console: v1Only,
    matrix: true,
  },
  v1Advisories: {
    service: V1AdvisoriesService,
    rules: v1crud(AdvisoriesService, "Advisory", "Advisories"),
    adapter: true,
    store: v1Adapter,
    cli: v1Only,
    console: v1Only,
    matrix: true,
  },
  events: {
    service: EventsService,
    // The audit trail: only under the groups where the caller holds events.list (owners).
    // Webhook subscriptions: events.subscriptions.* at the subscription's group, owners only
    // (a sink URL may carry a token of the subscriber's).
    capabilities: [
      { kind: "events", verbs: ["list"], viewers: false },
      { kind: "events.subscriptions", verbs: crudVerbs, viewers: false },
    ],
    rules: {
      ListEvents: { kind: "list", capability: "events.list" },
      // The same rule as ListEvents: an export is its pages in one answer.
      ExportEvents: { kind: "list", capability: "events.list" },
      ...crud(EventsService, "events.subscriptions", "subscription", { noun: "Subscription" }),
    },
    store: [
      "listEvents",
      "listSubscriptions",
      "getSubscription",
      "getSubscriptionCount",
      "createSubscription",
      "updateSubscription",
      "deleteSubscription",
    ],
    cli: [
      { group: "events", command: "", noun: "Event" },
      { group: "events", command: "subscriptions", noun: "Subscription" },
    ],
    console: "events",
    matrix: true,
  },
} as const satisfies Readonly<Record<string, ServiceEntry>>;

/** The service table's type, for what is derived from it at compile time. */
export type ServiceTable = typeof serviceTable;
/** An entry's name in the table (`groups`, `v1Groups`, ...). */
export type ServiceName = keyof ServiceTable;

/** The table's entries, in order. */
export const serviceEntries: readonly (ServiceEntry & { readonly name: ServiceName })[] =
  Object.entries(serviceTable).map(([name, e]) => ({ ...e, name: name as ServiceName }));

/** The API's services: every one is served over gRPC, gRPC-Web, Connect and REST. */
export const apiServices: readonly DescService[] = serviceEntries.map((e) => e.service);

/**
 * The protocol's own services, beside the API: health checks and the API's shape are public;
 * its data is not. The server creates their implementations (src/planes/rpc-plane.ts), over the API
 * services listed above.
 */
export const protocolServices = [
  {
    service: Health,
    rules: {
      Check: { kind: "public" },
      // A watcher with a token gets a slot that anonymous watchers cannot take (health.ts).
      Watch: { kind: "public", identifies: true },
    },
  },
  { service: ServerReflection, rules: { ServerReflectionInfo: { kind: "public" } } },
  { service: ServerReflectionAlpha, rules: { ServerReflectionInfo: { kind: "public" } } },
] as const satisfies readonly Pick<ServiceEntry, "service" | "rules">[];

/** The places of an entry on the command line: none, one, or one per resource. */
export function cliPlaces(entry: Pick<ServiceEntry, "cli">): readonly CliPlace[] {
  if (isNot(entry.cli)) return [];
  return Array.isArray(entry.cli) ? entry.cli : [entry.cli as CliPlace];
}

/** Whether an entry field is a deliberate absence (`{ none: why }`). */
export function isNot(v: unknown): v is Not {
  return typeof v === "object" && v !== null && "none" in v;
}
