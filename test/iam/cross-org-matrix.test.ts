import { readFileSync } from "node:fs";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Client, Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EventsService } from "../../gen/gatehouse/events/v2beta1/events_pb.js";
import type { AccessService } from "../../gen/gatehouse/iam/v2beta1/access_pb.js";
import type { PeopleService } from "../../gen/gatehouse/iam/v2beta1/people_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { eventTypeOf, isMutating } from "../../src/events/audit-interceptor.js";
import { apiServices, serviceEntries } from "../../src/service-table.js";
import { hashCode } from "../../src/services/iam/group-invites.js";
import { newChildUid, newRootUid } from "../../src/uid.js";
import { connectErr } from "../helpers/connect-errors.js";
import { digestOf } from "../helpers/digests.js";
import type { IamClients } from "../helpers/iam-clients.js";
import { type InMemoryServer, iamOf, startInMemory, v1Of } from "../helpers/in-memory.js";
import { type Backend, backends, storeOn } from "../helpers/in-memory-backends.js";
import type { RegistryClients } from "../helpers/registry-clients.js";
import type { TestOrg } from "../helpers/test-orgs.js";
import type { V1Clients } from "../helpers/v1-clients.js";

/**
 * Every RPC, every kind of caller, against resources of organization A: the expected code per
 * cell, and nothing of A in any answer to a caller outside it. To cover another service, add
 * its clients to Clients and its rows to `rpcs`. Served in memory (helpers/in-memory.ts: the
 * server's own interceptors, access control and handlers, no socket): what a cell checks is
 * the policy, the same on every protocol; test/e2e covers the protocols themselves.
 */

// advisorA holds only advisories.admin at A: the one caller that may write advisories (the
// owner role leaves advisory writes out). Outside the advisories it is as `unbound`.
const callers = ["ownerA", "viewerA", "advisorA", "ownerB", "unbound", "anonymous"] as const;
type CallerName = (typeof callers)[number];
type Expect = Record<Exclude<CallerName, "advisorA">, number> & { advisorA?: number };
/** The callers inside organization A, who may see its resources. */
const insideA: readonly CallerName[] = ["ownerA", "viewerA", "advisorA"];

/** The v1 services, each an adapter over its v2 twin (the service table's adapters). */
const v1Services = serviceEntries.filter((e) => e.adapter).map((e) => e.service);

/** The IAM, registry and advisories clients of one caller, and its v1 clients. */
type Clients = IamClients &
  Omit<RegistryClients, "groups"> & {
    access: Client<typeof AccessService>;
    events: Client<typeof EventsService>;
    people: Client<typeof PeopleService>;
    v1: V1Clients;
  };

const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const editor = builtinRoles.find((r) => r.name === "editor")!;
// The secret every organization-A resource carries in its name, so a leak is easy to spot.
const secret = "alpha-secret";

/** Fresh resources of organization A, one set per cell, so that writes do not interfere. */
interface Fixture {
  org: string;
  group: string;
  leaf: string;
  identity: string;
  role: string;
  freeRole: string;
  binding: string;
  /** A team of `group` with `identity` as its member. */
  team: string;
  missing: string;
  /** A repo with `tag`, so it refuses deletion. */
  repo: string;
  /** A repo without tags. */
  emptyRepo: string;
  tag: string;
  tagName: string;
  advisory: string;
  /** An identity provider in `group`; its client secret carries the secret too. */
  provider: string;
  /** The account association of `group` (its uid is the group's); `leaf` has none. */
  association: string;
  /** A group invite of `group` for the viewer role, and its code. */
  invite: string;
  inviteCode: string;
  /** A pending access request of `identity` for the editor role at `group`. */
  accessRequest: string;
  /** A webhook subscription of `group`, and its signing secret. */
  subscription: string;
  subscriptionSecret: string;
  /** A person bound at `group` (name and email carry the secret), with a live session. */
  person: string;
  session: string;
}

interface RpcCase {
  rpc: string;
  /** `me`: the uid of the calling identity (the anonymous caller's is the viewer's). */
  call: (c: Clients, fx: Fixture, me: string) => Promise<unknown>;
  expect: Expect;
  /** A v1 List by id: one item exactly where this (its v2 Get's) expectation is 0. */
  byId?: Expect;
  /** Lists: every caller may call; this is what a caller outside A may see. */
  list?: true;
  /** The caller holds a code of A's: learning the group it joins is the point. */
  invited?: true;
  /** A v1 row: the v2 row it adapts (its change is recorded under that row's type). */
  twin?: string;
  /** The type its change records, when not its RPC's (a create that moved a tag). */
  records?: string;
  /** An OK answer that changed nothing, so records nothing: a Delete of what is gone. */
  unchanged?: true;
}

// Expected codes: 0 OK, 3 INVALID_ARGUMENT, 5 NOT_FOUND, 6 ALREADY_EXISTS, 7 PERMISSION_DENIED,
// 16 UNAUTHENTICATED.
const read: Expect = { ownerA: 0, viewerA: 0, ownerB: 7, unbound: 7, anonymous: 16 };
const write: Expect = { ownerA: 0, viewerA: 7, ownerB: 7, unbound: 7, anonymous: 16 };
const missing: Expect = { ownerA: 5, viewerA: 5, ownerB: 7, unbound: 7, anonymous: 16 };
const missingWrite: Expect = { ownerA: 5, viewerA: 7, ownerB: 7, unbound: 7, anonymous: 16 };
const list: Expect = { ownerA: 0, viewerA: 0, ownerB: 0, unbound: 0, anonymous: 16 };
// Advisories: every built-in but advisories.admin that reads reads them; only it writes them.
const advisoryRead: Expect = { ...read, advisorA: 0 };
const advisoryMissing: Expect = { ...missing, advisorA: 5 };
const advisoryWrite: Expect = {
  ownerA: 7,
  viewerA: 7,
  advisorA: 0,
  ownerB: 7,
  unbound: 7,
  anonymous: 16,
};
const advisoryMissingWrite: Expect = { ...advisoryWrite, advisorA: 5 };
// Webhook subscriptions are the owners' alone: a viewer may not even read them.
const ownersRead: Expect = write;
const ownersMissing: Expect = missingWrite;
// An idempotent Delete of what is not there: OK to whoever could have deleted it, and the same
// PERMISSION_DENIED as for one that exists to everyone else.
const goneWrite: Expect = write;
const within = (fx: Fixture) => ({ descendantsOf: fx.org, childrenOf: "" });
// A type no call here makes: nothing is ever delivered to the fixtures' sinks.
const hook = {
  sink: `https://hooks.example.com/${secret}`,
  eventTypes: ["dev.gatehouse.iam.group.renamed.v1"],
};

const rpcs: RpcCase[] = [
  // GroupsService
  { rpc: "ListGroups", call: (c) => c.groups.listGroups({}), expect: list, list: true },
  {
    rpc: "ListGroups under A",
    call: (c, fx) => c.groups.listGroups({ uidp: within(fx) }),
    expect: list,
    list: true,
  },
  { rpc: "GetGroup", call: (c, fx) => c.groups.getGroup({ uid: fx.group }), expect: read },
  {
    rpc: "GetGroup missing",
    call: (c, fx) => c.groups.getGroup({ uid: fx.missing }),
    expect: missing,
  },
  {
    rpc: "CreateGroup",
    call: (c, fx) => c.groups.createGroup({ parent: fx.org, group: { name: "new" } }),
    expect: write,
  },
  {
    rpc: "CreateGroup organization",
    call: (c) => c.groups.createGroup({ parent: "", group: { name: "mine" } }),
    // Only a person may create an organization; both owners here are persons.
    expect: { ownerA: 0, viewerA: 7, ownerB: 0, unbound: 7, anonymous: 16 },
  },
  {
    rpc: "UpdateGroup",
    call: (c, fx) => c.groups.updateGroup({ group: { uid: fx.group, description: "x" } }),
    expect: write,
  },
  {
    rpc: "UpdateGroup missing",
    call: (c, fx) => c.groups.updateGroup({ group: { uid: fx.missing, description: "x" } }),
    expect: missingWrite,
  },
  { rpc: "DeleteGroup", call: (c, fx) => c.groups.deleteGroup({ uid: fx.leaf }), expect: write },
  {
    rpc: "DeleteGroup missing",
    call: (c, fx) => c.groups.deleteGroup({ uid: fx.missing }),
    expect: missingWrite,
  },
  // IdentitiesService
  { rpc: "ListIdentities", call: (c) => c.identities.listIdentities({}), expect: list, list: true },
  {
    rpc: "ListIdentities under A",
    call: (c, fx) => c.identities.listIdentities({ uidp: within(fx) }),
    expect: list,
    list: true,
  },
  {
    rpc: "GetIdentity",
    call: (c, fx) => c.identities.getIdentity({ uid: fx.identity }),
    expect: read,
  },
  {
    rpc: "GetIdentity missing",
    call: (c, fx) => c.identities.getIdentity({ uid: `${fx.group}/0000000000000000` }),
    expect: missing,
  },
  {
    rpc: "CreateIdentity",
    call: (c, fx) =>
      c.identities.createIdentity({
        parent: fx.group,
        identity: {
          name: "new",
          method: { case: "claimMatch", value: { issuer: "https://i.test", subject: "s" } },
        },
      }),
    expect: write,
  },
  {
    rpc: "UpdateIdentity",
    call: (c, fx) =>
      c.identities.updateIdentity({ identity: { uid: fx.identity, description: "x" } }),
    expect: write,
  },
  {
    rpc: "DeleteIdentity",
    call: (c, fx) => c.identities.deleteIdentity({ uid: fx.identity }),
    expect: write,
  },
  // RolesService
  { rpc: "ListRoles", call: (c) => c.roles.listRoles({}), expect: list, list: true },
  {
    rpc: "ListRoles under A",
    call: (c, fx) => c.roles.listRoles({ uidp: within(fx) }),
    expect: list,
    list: true,
  },
  { rpc: "GetRole", call: (c, fx) => c.roles.getRole({ uid: fx.role }), expect: read },
  {
    rpc: "GetRole built-in",
    call: (c) => c.roles.getRole({ uid: viewer.uid }),
    // Built-in roles are the same everywhere: anyone who may list roles somewhere reads them.
    expect: { ownerA: 0, viewerA: 0, ownerB: 0, unbound: 7, anonymous: 16 },
  },
  {
    rpc: "GetRole missing",
    call: (c, fx) => c.roles.getRole({ uid: `${fx.org}/0000000000000000` }),
    expect: missing,
  },
  {
    rpc: "CreateRole",
    call: (c, fx) =>
      c.roles.createRole({ parent: fx.org, role: { name: "new", capabilities: ["groups.list"] } }),
    expect: write,
  },
  {
    rpc: "UpdateRole",
    call: (c, fx) => c.roles.updateRole({ role: { uid: fx.role, description: "x" } }),
    expect: write,
  },
  {
    rpc: "UpdateRole built-in",
    call: (c) => c.roles.updateRole({ role: { uid: viewer.uid, description: "x" } }),
    expect: { ownerA: 9, viewerA: 7, ownerB: 9, unbound: 7, anonymous: 16 },
  },
  { rpc: "DeleteRole", call: (c, fx) => c.roles.deleteRole({ uid: fx.freeRole }), expect: write },
  {
    rpc: "DeleteRole bound",
    call: (c, fx) => c.roles.deleteRole({ uid: fx.role }),
    expect: { ownerA: 9, viewerA: 7, ownerB: 7, unbound: 7, anonymous: 16 },
  },
  // RoleBindingsService
  {
    rpc: "ListRoleBindings",
    call: (c) => c.roleBindings.listRoleBindings({}),
    expect: list,
    list: true,
  },
  {
    rpc: "ListRoleBindings of A's identity",
    call: (c, fx) => c.roleBindings.listRoleBindings({ identity: fx.identity }),
    expect: list,
    list: true,
  },
  {
    rpc: "GetRoleBinding",
    call: (c, fx) => c.roleBindings.getRoleBinding({ uid: fx.binding }),
    expect: read,
  },
  {
    rpc: "CreateRoleBinding",
    call: (c, fx) =>
      c.roleBindings.createRoleBinding({
        parent: fx.group,
        roleBinding: { identityUid: fx.identity, roleUid: viewer.uid },
      }),
    expect: write,
  },
  {
    rpc: "BatchCreateRoleBindings",
    call: (c, fx) =>
      c.roleBindings.batchCreateRoleBindings({
        parent: fx.group,
        requests: [{ roleBinding: { identityUid: fx.identity, roleUid: viewer.uid } }],
      }),
    expect: write,
  },
  {
    rpc: "UpdateRoleBinding",
    call: (c, fx) =>
      c.roleBindings.updateRoleBinding({ roleBinding: { uid: fx.binding, roleUid: editor.uid } }),
    expect: write,
  },
  {
    rpc: "DeleteRoleBinding",
    call: (c, fx) => c.roleBindings.deleteRoleBinding({ uid: fx.binding }),
    expect: write,
  },
  {
    rpc: "DeleteRoleBinding missing",
    call: (c, fx) => c.roleBindings.deleteRoleBinding({ uid: fx.missing }),
    expect: goneWrite,
    unchanged: true,
  },
  // ScimService: an organization's SCIM connection, made (through the store) before each call
  // that reads or revokes it, so that no cell depends on another's.
  {
    rpc: "CreateScimToken",
    call: (c, fx) => c.scim.createScimToken({ org: fx.org }),
    expect: write,
  },
  {
    rpc: "GetScimConnection",
    call: async (c, fx) => {
      await ts.store.putScimConnection({ orgUid: fx.org, tokenHash: "h", creatorUid: "c", now: 1 });
      return c.scim.getScimConnection({ org: fx.org });
    },
    expect: read,
  },
  {
    rpc: "DeleteScimToken",
    call: async (c, fx) => {
      await ts.store.putScimConnection({ orgUid: fx.org, tokenHash: "h", creatorUid: "c", now: 1 });
      return c.scim.deleteScimToken({ org: fx.org });
    },
    expect: write,
  },
  // TeamsService
  { rpc: "ListTeams", call: (c) => c.teams.listTeams({}), expect: list, list: true },
  {
    rpc: "ListTeams under A",
    call: (c, fx) => c.teams.listTeams({ uidp: within(fx) }),
    expect: list,
    list: true,
  },
  { rpc: "GetTeam", call: (c, fx) => c.teams.getTeam({ uid: fx.team }), expect: read },
  {
    rpc: "GetTeam missing",
    call: (c, fx) => c.teams.getTeam({ uid: fx.missing }),
    expect: missing,
  },
  {
    rpc: "CreateTeam",
    call: (c, fx) => c.teams.createTeam({ parent: fx.group, team: { name: "new" } }),
    expect: write,
  },
  {
    rpc: "UpdateTeam",
    call: (c, fx) => c.teams.updateTeam({ team: { uid: fx.team, description: "x" } }),
    expect: write,
  },
  {
    rpc: "UpdateTeam missing",
    call: (c, fx) => c.teams.updateTeam({ team: { uid: fx.missing, description: "x" } }),
    expect: missingWrite,
  },
  { rpc: "DeleteTeam", call: (c, fx) => c.teams.deleteTeam({ uid: fx.team }), expect: write },
  {
    rpc: "DeleteTeam missing",
    call: (c, fx) => c.teams.deleteTeam({ uid: fx.missing }),
    expect: missingWrite,
  },
  {
    rpc: "ListTeamMembers",
    call: (c, fx) => c.teams.listTeamMembers({ uid: fx.team }),
    expect: read,
  },
  {
    rpc: "ListTeamMembers missing",
    call: (c, fx) => c.teams.listTeamMembers({ uid: fx.missing }),
    expect: missing,
  },
  {
    rpc: "AddTeamMembers",
    call: (c, fx, me) => c.teams.addTeamMembers({ uid: fx.team, identityUids: [me] }),
    // ownerA is a person already in A: it may join.
    expect: write,
  },
  {
    rpc: "AddTeamMembers of B's owner",
    call: (c, fx) => c.teams.addTeamMembers({ uid: fx.team, identityUids: [orgB.owner.uid] }),
    // A person who is not in A is refused as an identity that does not exist would be.
    expect: { ownerA: 3, viewerA: 7, ownerB: 7, unbound: 7, anonymous: 16 },
  },
  {
    rpc: "AddTeamMembers missing",
    call: (c, fx) => c.teams.addTeamMembers({ uid: fx.missing, identityUids: [fx.identity] }),
    expect: missingWrite,
  },
  {
    rpc: "RemoveTeamMembers",
    call: (c, fx) => c.teams.removeTeamMembers({ uid: fx.team, identityUids: [fx.identity] }),
    expect: write,
  },
  {
    rpc: "RemoveTeamMembers missing",
    call: (c, fx) => c.teams.removeTeamMembers({ uid: fx.missing, identityUids: [fx.identity] }),
    expect: missingWrite,
  },
  // IdentityProvidersService
  {
    rpc: "ListIdentityProviders",
    call: (c) => c.identityProviders.listIdentityProviders({}),
    expect: list,
    list: true,
  },
  {
    rpc: "ListIdentityProviders under A",
    call: (c, fx) => c.identityProviders.listIdentityProviders({ uidp: within(fx) }),
    expect: list,
    list: true,
  },
  {
    rpc: "GetIdentityProvider",
    call: (c, fx) => c.identityProviders.getIdentityProvider({ uid: fx.provider }),
    expect: read,
  },
  {
    rpc: "GetIdentityProvider missing",
    call: (c, fx) => c.identityProviders.getIdentityProvider({ uid: fx.missing }),
    expect: missing,
  },
  {
    rpc: "CreateIdentityProvider",
    call: (c, fx) =>
      c.identityProviders.createIdentityProvider({
        parent: fx.group,
        identityProvider: {
          name: "new",
          defaultRole: viewer.uid,
          oidc: { issuer: "https://idp.test", clientId: "c", clientSecret: `${secret}-new` },
        },
      }),
    expect: write,
  },
  {
    rpc: "UpdateIdentityProvider",
    call: (c, fx) =>
      c.identityProviders.updateIdentityProvider({
        identityProvider: { uid: fx.provider, description: "x" },
      }),
    expect: write,
  },
  {
    rpc: "UpdateIdentityProvider missing",
    call: (c, fx) =>
      c.identityProviders.updateIdentityProvider({
        identityProvider: { uid: fx.missing, description: "x" },
      }),
    expect: missingWrite,
  },
  {
    rpc: "DeleteIdentityProvider",
    call: (c, fx) => c.identityProviders.deleteIdentityProvider({ uid: fx.provider }),
    expect: write,
  },
  {
    rpc: "DeleteIdentityProvider missing",
    call: (c, fx) => c.identityProviders.deleteIdentityProvider({ uid: fx.missing }),
    expect: missingWrite,
  },
  // AccountAssociationsService
  {
    rpc: "ListAccountAssociations",
    call: (c) => c.accountAssociations.listAccountAssociations({}),
    expect: list,
    list: true,
  },
  {
    rpc: "ListAccountAssociations under A",
    call: (c, fx) => c.accountAssociations.listAccountAssociations({ uidp: within(fx) }),
    expect: list,
    list: true,
  },
  {
    rpc: "GetAccountAssociation",
    call: (c, fx) => c.accountAssociations.getAccountAssociation({ uid: fx.association }),
    expect: read,
  },
  {
    rpc: "GetAccountAssociation missing",
    call: (c, fx) => c.accountAssociations.getAccountAssociation({ uid: fx.leaf }),
    expect: missing,
  },
  {
    rpc: "CreateAccountAssociation",
    call: (c, fx) =>
      c.accountAssociations.createAccountAssociation({
        parent: fx.leaf,
        accountAssociation: { amazon: { account: "123456789012" } },
      }),
    expect: write,
  },
  {
    rpc: "CreateAccountAssociation second",
    call: (c, fx) =>
      c.accountAssociations.createAccountAssociation({
        parent: fx.group,
        accountAssociation: { amazon: { account: "123456789012" } },
      }),
    expect: { ownerA: 6, viewerA: 7, ownerB: 7, unbound: 7, anonymous: 16 },
  },
  {
    rpc: "UpdateAccountAssociation",
    call: (c, fx) =>
      c.accountAssociations.updateAccountAssociation({
        accountAssociation: { uid: fx.association, description: "x" },
      }),
    expect: write,
  },
  {
    rpc: "UpdateAccountAssociation missing",
    call: (c, fx) =>
      c.accountAssociations.updateAccountAssociation({
        accountAssociation: { uid: fx.leaf, description: "x" },
      }),
    expect: missingWrite,
  },
  {
    rpc: "DeleteAccountAssociation",
    call: (c, fx) => c.accountAssociations.deleteAccountAssociation({ uid: fx.association }),
    expect: write,
  },
  {
    rpc: "DeleteAccountAssociation missing",
    call: (c, fx) => c.accountAssociations.deleteAccountAssociation({ uid: fx.leaf }),
    expect: goneWrite,
    unchanged: true,
  },
  // ReposService
  { rpc: "ListRepos", call: (c) => c.repos.listRepos({}), expect: list, list: true },
  {
    rpc: "ListRepos under A",
    call: (c, fx) => c.repos.listRepos({ uidp: within(fx) }),
    expect: list,
    list: true,
  },
  { rpc: "GetRepo", call: (c, fx) => c.repos.getRepo({ uid: fx.repo }), expect: read },
  {
    rpc: "GetRepo missing",
    call: (c, fx) => c.repos.getRepo({ uid: fx.missing }),
    expect: missing,
  },
  {
    rpc: "CreateRepo",
    call: (c, fx) => c.repos.createRepo({ parent: fx.group, repo: { name: "new" } }),
    expect: write,
  },
  {
    rpc: "UpdateRepo",
    call: (c, fx) => c.repos.updateRepo({ repo: { uid: fx.repo, description: "x" } }),
    expect: write,
  },
  {
    rpc: "UpdateRepo missing",
    call: (c, fx) => c.repos.updateRepo({ repo: { uid: fx.missing, description: "x" } }),
    expect: missingWrite,
  },
  { rpc: "DeleteRepo", call: (c, fx) => c.repos.deleteRepo({ uid: fx.emptyRepo }), expect: write },
  {
    rpc: "DeleteRepo with tags",
    call: (c, fx) => c.repos.deleteRepo({ uid: fx.repo }),
    expect: { ownerA: 9, viewerA: 7, ownerB: 7, unbound: 7, anonymous: 16 },
  },
  {
    rpc: "DeleteRepo missing",
    call: (c, fx) => c.repos.deleteRepo({ uid: fx.missing }),
    expect: missingWrite,
  },
  // TagsService
  { rpc: "ListTags", call: (c) => c.tags.listTags({}), expect: list, list: true },
  {
    rpc: "ListTags of A's repo",
    call: (c, fx) => c.tags.listTags({ uidp: { childrenOf: fx.repo, descendantsOf: "" } }),
    expect: list,
    list: true,
  },
  {
    rpc: "ListTags of A's digest",
    call: (c) => c.tags.listTags({ digest: digestOf("a") }),
    expect: list,
    list: true,
  },
  { rpc: "GetTag", call: (c, fx) => c.tags.getTag({ uid: fx.tag }), expect: read },
  {
    rpc: "GetTag missing",
    call: (c, fx) => c.tags.getTag({ uid: `${fx.repo}/ffffffffffffffff` }),
    expect: missing,
  },
  {
    rpc: "CreateTag",
    call: (c, fx) =>
      c.tags.createTag({ parent: fx.repo, tag: { name: "new", digest: digestOf("b") } }),
    expect: write,
  },
  {
    rpc: "CreateTag move",
    call: (c, fx) =>
      c.tags.createTag({ parent: fx.repo, tag: { name: fx.tagName, digest: digestOf("c") } }),
    expect: write,
    // Moving a tag is its update, as a push that moves it is.
    records: "dev.gatehouse.registry.tag.updated.v1",
  },
  { rpc: "DeleteTag", call: (c, fx) => c.tags.deleteTag({ uid: fx.tag }), expect: write },
  {
    rpc: "DeleteTag missing",
    call: (c, fx) => c.tags.deleteTag({ uid: `${fx.repo}/ffffffffffffffff` }),
    expect: missingWrite,
  },
  // AdvisoriesService
  {
    rpc: "ListAdvisories",
    call: (c) => c.advisories.listAdvisories({}),
    expect: { ...list, advisorA: 0 },
    list: true,
  },
  {
    rpc: "ListAdvisories matching A's",
    call: (c) => c.advisories.listAdvisories({ query: secret }),
    expect: { ...list, advisorA: 0 },
    list: true,
  },
  {
    rpc: "GetAdvisory",
    call: (c, fx) => c.advisories.getAdvisory({ uid: fx.advisory }),
    expect: advisoryRead,
  },
  {
    rpc: "GetAdvisory missing",
    call: (c, fx) => c.advisories.getAdvisory({ uid: fx.missing }),
    expect: advisoryMissing,
  },
  {
    rpc: "CreateAdvisory",
    call: (c, fx) =>
      c.advisories.createAdvisory({ parent: fx.group, advisory: { advisoryId: "NEW-1" } }),
    expect: advisoryWrite,
  },
  {
    rpc: "UpdateAdvisory",
    call: (c, fx) => c.advisories.updateAdvisory({ advisory: { uid: fx.advisory, summary: "x" } }),
    expect: advisoryWrite,
  },
  {
    rpc: "UpdateAdvisory missing",
    call: (c, fx) => c.advisories.updateAdvisory({ advisory: { uid: fx.missing, summary: "x" } }),
    expect: advisoryMissingWrite,
  },
  {
    rpc: "DeleteAdvisory",
    call: (c, fx) => c.advisories.deleteAdvisory({ uid: fx.advisory }),
    expect: advisoryWrite,
  },
  {
    rpc: "DeleteAdvisory missing",
    call: (c, fx) => c.advisories.deleteAdvisory({ uid: fx.missing }),
    expect: advisoryMissingWrite,
  },
  // GroupInvitesService
  {
    rpc: "ListGroupInvites",
    call: (c) => c.groupInvites.listGroupInvites({}),
    expect: list,
    list: true,
  },
  {
    rpc: "ListGroupInvites under A",
    call: (c, fx) => c.groupInvites.listGroupInvites({ uidp: within(fx) }),
    expect: list,
    list: true,
  },
  {
    rpc: "GetGroupInvite",
    call: (c, fx) => c.groupInvites.getGroupInvite({ uid: fx.invite }),
    expect: read,
  },
  {
    rpc: "GetGroupInvite missing",
    call: (c, fx) => c.groupInvites.getGroupInvite({ uid: fx.missing }),
    expect: missing,
  },
  {
    rpc: "CreateGroupInvite",
    call: (c, fx) =>
      c.groupInvites.createGroupInvite({ parent: fx.group, groupInvite: { roleUid: viewer.uid } }),
    expect: write,
  },
  {
    rpc: "UpdateGroupInvite",
    call: (c, fx) =>
      c.groupInvites.updateGroupInvite({ groupInvite: { uid: fx.invite, singleUse: true } }),
    expect: write,
  },
  {
    rpc: "UpdateGroupInvite missing",
    call: (c, fx) =>
      c.groupInvites.updateGroupInvite({ groupInvite: { uid: fx.missing, singleUse: true } }),
    expect: missingWrite,
  },
  {
    rpc: "DeleteGroupInvite",
    call: (c, fx) => c.groupInvites.deleteGroupInvite({ uid: fx.invite }),
    expect: write,
  },
  {
    rpc: "DeleteGroupInvite missing",
    call: (c, fx) => c.groupInvites.deleteGroupInvite({ uid: fx.missing }),
    expect: missingWrite,
  },
  {
    rpc: "RedeemGroupInvite",
    call: async (c, fx) => {
      const binding = await c.groupInvites.redeemGroupInvite({ code: fx.inviteCode });
      // Undone at once, so that the callers keep their standing for the other cells.
      await ts.store.deleteRoleBinding(binding.uid);
      return binding;
    },
    // Whoever holds the code may join: a person from anywhere, or an identity of A. ownerB is
    // a person; the workload identities here all live in A.
    expect: { ownerA: 0, viewerA: 0, ownerB: 0, unbound: 0, anonymous: 16 },
    invited: true,
  },
  // AccessRequestsService: asking needs sight of the group; seeing and answering, the right
  // to grant there (viewers have neither role_bindings.create nor the editor's writes). A
  // List answers everyone, with only what lies where they may grant.
  {
    rpc: "ListAccessRequests",
    call: (c) => c.accessRequests.listAccessRequests({}),
    expect: list,
    list: true,
  },
  {
    rpc: "ListAccessRequests under A",
    call: (c, fx) => c.accessRequests.listAccessRequests({ uidp: within(fx) }),
    expect: list,
    list: true,
  },
  {
    rpc: "GetAccessRequest",
    call: (c, fx) => c.accessRequests.getAccessRequest({ uid: fx.accessRequest }),
    expect: write,
  },
  {
    rpc: "GetAccessRequest missing",
    call: (c, fx) => c.accessRequests.getAccessRequest({ uid: fx.missing }),
    expect: missingWrite,
  },
  {
    rpc: "CreateAccessRequest",
    call: (c, fx) =>
      c.accessRequests.createAccessRequest({
        parent: fx.group,
        accessRequest: { roleUid: editor.uid, duration: { seconds: 3600n }, reason: "x" },
      }),
    expect: read,
  },
  {
    rpc: "ApproveAccessRequest",
    call: (c, fx) => c.accessRequests.approveAccessRequest({ uid: fx.accessRequest }),
    expect: write,
  },
  {
    rpc: "ApproveAccessRequest missing",
    call: (c, fx) => c.accessRequests.approveAccessRequest({ uid: fx.missing }),
    expect: missingWrite,
  },
  {
    rpc: "DenyAccessRequest",
    call: (c, fx) => c.accessRequests.denyAccessRequest({ uid: fx.accessRequest }),
    expect: write,
  },
  {
    rpc: "DenyAccessRequest missing",
    call: (c, fx) => c.accessRequests.denyAccessRequest({ uid: fx.missing }),
    expect: missingWrite,
  },
  // EventsService: each organization's audit trail is its own.
  { rpc: "ListEvents", call: (c) => c.events.listEvents({}), expect: list, list: true },
  {
    rpc: "ListEvents under A",
    call: (c, fx) => c.events.listEvents({ uidp: within(fx) }),
    expect: list,
    list: true,
  },
  {
    // A stream of the last hour: what ListEvents would list, all of it in one answer.
    rpc: "ExportEvents",
    call: async (c, fx) => {
      const events = [];
      const startTime = timestampFromMs(Date.now() - 3_600_000);
      for await (const e of c.events.exportEvents({ uidp: within(fx), startTime })) events.push(e);
      return { events };
    },
    expect: list,
  },
  {
    rpc: "ListSubscriptions",
    call: (c) => c.events.listSubscriptions({}),
    expect: list,
    list: true,
  },
  {
    rpc: "ListSubscriptions under A",
    call: (c, fx) => c.events.listSubscriptions({ uidp: within(fx) }),
    expect: list,
    list: true,
  },
  {
    rpc: "GetSubscription",
    call: (c, fx) => c.events.getSubscription({ uid: fx.subscription }),
    expect: ownersRead,
  },
  {
    rpc: "GetSubscription missing",
    call: (c, fx) => c.events.getSubscription({ uid: fx.missing }),
    expect: ownersMissing,
  },
  {
    rpc: "CreateSubscription",
    call: (c, fx) =>
      c.events.createSubscription({
        parent: fx.group,
        subscription: { name: `new ${Math.random()}`, ...hook },
      }),
    expect: write,
  },
  {
    rpc: "UpdateSubscription",
    call: (c, fx) =>
      c.events.updateSubscription({ subscription: { uid: fx.subscription, description: "x" } }),
    expect: write,
  },
  {
    rpc: "UpdateSubscription missing",
    call: (c, fx) =>
      c.events.updateSubscription({ subscription: { uid: fx.missing, description: "x" } }),
    expect: missingWrite,
  },
  {
    rpc: "DeleteSubscription",
    call: (c, fx) => c.events.deleteSubscription({ uid: fx.subscription }),
    expect: write,
  },
  {
    rpc: "DeleteSubscription missing",
    call: (c, fx) => c.events.deleteSubscription({ uid: fx.missing }),
    expect: missingWrite,
  },
  {
    rpc: "RedeemGroupInvite unknown code",
    call: (c) => c.groupInvites.redeemGroupInvite({ code: "not-a-code" }),
    expect: { ownerA: 5, viewerA: 5, ownerB: 5, unbound: 5, anonymous: 16 },
  },
  // PeopleService: the owners' alone (emails and sessions), and only their own people.
  {
    rpc: "ListPeople",
    call: (c, fx) => c.people.listPeople({ groupUid: fx.org }),
    expect: ownersRead,
  },
  {
    rpc: "ListPeople searched",
    call: (c, fx) => c.people.listPeople({ groupUid: fx.group, query: secret }),
    expect: ownersRead,
  },
  {
    rpc: "GetPerson",
    call: (c, fx) => c.people.getPerson({ uid: fx.person, groupUid: fx.org }),
    expect: ownersRead,
  },
  {
    rpc: "GetPerson missing",
    call: (c, fx) => c.people.getPerson({ uid: "0".repeat(40), groupUid: fx.org }),
    expect: ownersMissing,
  },
  {
    rpc: "GetPerson of B's owner through A",
    call: (c, fx) => c.people.getPerson({ uid: orgB.owner.uid, groupUid: fx.org }),
    // Never another organization's person: NOT_FOUND to A's owner, whoever B's owner is.
    expect: ownersMissing,
  },
  {
    rpc: "ListPersonSessions",
    call: (c, fx) => c.people.listPersonSessions({ personUid: fx.person, groupUid: fx.org }),
    expect: ownersRead,
  },
  {
    rpc: "RevokePersonSessions",
    call: (c, fx) =>
      c.people.revokePersonSessions({
        personUid: fx.person,
        groupUid: fx.group,
        sessionId: fx.session,
      }),
    expect: write,
  },
  {
    rpc: "RevokePersonSessions of B's owner through A",
    call: (c, fx) => c.people.revokePersonSessions({ personUid: orgB.owner.uid, groupUid: fx.org }),
    expect: missingWrite,
  },
  // AccessService
  {
    rpc: "CheckAccess",
    call: (c, fx) =>
      c.access.checkAccess({
        identityUid: fx.identity,
        capability: "groups.list",
        groupUid: fx.group,
      }),
    // Another identity's access shows its bindings: role_bindings.list at the group.
    expect: read,
  },
  {
    rpc: "CheckAccess missing group",
    call: (c, fx) =>
      c.access.checkAccess({
        identityUid: fx.identity,
        capability: "groups.list",
        groupUid: fx.missing,
      }),
    // Whether the group exists plays no part, as for authorization itself.
    expect: read,
  },
  {
    rpc: "CheckAccess of oneself in A",
    call: (c, fx, me) =>
      c.access.checkAccess({ identityUid: me, capability: "repo.create", groupUid: fx.group }),
    // About oneself, anyone: outside A the answer is a denial naming nothing of A.
    expect: list,
  },
  {
    rpc: "CheckAccess of A's identity in B",
    call: (c, fx) =>
      c.access.checkAccess({
        identityUid: fx.identity,
        capability: "groups.list",
        groupUid: orgB.uid,
      }),
    expect: { ownerA: 7, viewerA: 7, ownerB: 0, unbound: 7, anonymous: 16 },
  },
  {
    rpc: "ListCallerCapabilities",
    call: (c, fx) => c.access.listCallerCapabilities({ groupUid: fx.group }),
    // About the caller only: outside A, an empty list.
    expect: list,
  },
];

/**
 * A v1 method against A's resources, and the v2 row it adapts: it must answer that row's code
 * for every caller. A v1 List by id answers an empty list where its v2 Get is refused.
 */
interface V1Case {
  rpc: string;
  call: (c: V1Clients, fx: Fixture) => Promise<unknown>;
  twin: string;
  byId?: true;
}

const v1rpcs: V1Case[] = [
  { rpc: "v1.GroupsService/List", call: (c) => c.groups.list({}), twin: "ListGroups" },
  {
    rpc: "v1.GroupsService/List under A",
    call: (c, fx) => c.groups.list({ uidp: { descendantsOf: fx.org } }),
    twin: "ListGroups under A",
  },
  {
    rpc: "v1.GroupsService/List by id",
    call: (c, fx) => c.groups.list({ id: fx.group }),
    twin: "GetGroup",
    byId: true,
  },
  {
    rpc: "v1.GroupsService/List by missing id",
    call: (c, fx) => c.groups.list({ id: fx.missing }),
    twin: "GetGroup missing",
    byId: true,
  },
  {
    rpc: "v1.GroupsService/Create",
    call: (c, fx) => c.groups.create({ parent: fx.org, group: { name: "new-v1" } }),
    twin: "CreateGroup",
  },
  {
    rpc: "v1.GroupsService/Create organization",
    call: (c) => c.groups.create({ parent: "", group: { name: "mine-v1" } }),
    twin: "CreateGroup organization",
  },
  {
    rpc: "v1.GroupsService/Update",
    call: (c, fx) => c.groups.update({ id: fx.group, name: "renamed" }),
    twin: "UpdateGroup",
  },
  {
    rpc: "v1.GroupsService/Update missing",
    call: (c, fx) => c.groups.update({ id: fx.missing, name: "renamed" }),
    twin: "UpdateGroup missing",
  },
  {
    rpc: "v1.GroupsService/Delete",
    call: (c, fx) => c.groups.delete({ id: fx.leaf }),
    twin: "DeleteGroup",
  },
  {
    rpc: "v1.GroupsService/Delete missing",
    call: (c, fx) => c.groups.delete({ id: fx.missing }),
    twin: "DeleteGroup missing",
  },
  {
    // A v2 access request at A's group (viewer, 8 h): refused exactly where CreateAccessRequest is.
    rpc: "v1.GroupsService/RequestGroupAccess",
    call: (c, fx) => c.groups.requestGroupAccess({ groupId: fx.group }),
    twin: "CreateAccessRequest",
  },
  { rpc: "v1.IdentitiesService/List", call: (c) => c.identities.list({}), twin: "ListIdentities" },
  {
    rpc: "v1.IdentitiesService/List under A",
    call: (c, fx) => c.identities.list({ uidp: { descendantsOf: fx.org } }),
    twin: "ListIdentities under A",
  },
  {
    rpc: "v1.IdentitiesService/List by id",
    call: (c, fx) => c.identities.list({ id: fx.identity }),
    twin: "GetIdentity",
    byId: true,
  },
  {
    rpc: "v1.IdentitiesService/List by missing id",
    call: (c, fx) => c.identities.list({ id: `${fx.group}/0000000000000000` }),
    twin: "GetIdentity missing",
    byId: true,
  },
  {
    rpc: "v1.IdentitiesService/Create",
    call: (c, fx) =>
      c.identities.create({
        parentId: fx.group,
        identity: {
          name: "new",
          relationship: { case: "claimMatch", value: { issuer: "https://i.test", subject: "s" } },
        },
      }),
    twin: "CreateIdentity",
  },
  {
    rpc: "v1.IdentitiesService/Update",
    call: async (c, fx) => {
      // A full replace that keeps how the identity signs in: only its description changes.
      const current = (await ts.store.getIdentity(fx.identity))!;
      return c.identities.update({
        id: fx.identity,
        name: current.name,
        description: "x",
        relationship: { case: "claimMatch", value: { ...current.claimMatch! } },
      });
    },
    twin: "UpdateIdentity",
  },
  {
    rpc: "v1.IdentitiesService/Delete",
    call: (c, fx) => c.identities.delete({ id: fx.identity }),
    twin: "DeleteIdentity",
  },
  { rpc: "v1.RolesService/List", call: (c) => c.roles.list({}), twin: "ListRoles" },
  {
    rpc: "v1.RolesService/List under A",
    call: (c, fx) => c.roles.list({ uidp: { descendantsOf: fx.org } }),
    twin: "ListRoles under A",
  },
  {
    rpc: "v1.RolesService/List by id",
    call: (c, fx) => c.roles.list({ id: fx.role }),
    twin: "GetRole",
    byId: true,
  },
  {
    rpc: "v1.RolesService/List by built-in id",
    call: (c) => c.roles.list({ id: viewer.uid }),
    twin: "GetRole built-in",
    byId: true,
  },
  {
    rpc: "v1.RolesService/List by missing id",
    call: (c, fx) => c.roles.list({ id: `${fx.org}/0000000000000000` }),
    twin: "GetRole missing",
    byId: true,
  },
  {
    rpc: "v1.RolesService/Create",
    call: (c, fx) =>
      c.roles.create({ parentId: fx.org, role: { name: "new", capabilities: ["groups.list"] } }),
    twin: "CreateRole",
  },
  {
    rpc: "v1.RolesService/Update",
    call: (c, fx) =>
      c.roles.update({ id: fx.role, name: "r", description: "x", capabilities: ["groups.list"] }),
    twin: "UpdateRole",
  },
  {
    rpc: "v1.RolesService/Update built-in",
    call: (c) => c.roles.update({ id: viewer.uid, name: "viewer", capabilities: ["groups.list"] }),
    twin: "UpdateRole built-in",
  },
  {
    rpc: "v1.RolesService/Delete",
    call: (c, fx) => c.roles.delete({ id: fx.freeRole }),
    twin: "DeleteRole",
  },
  {
    rpc: "v1.RolesService/Delete bound",
    call: (c, fx) => c.roles.delete({ id: fx.role }),
    twin: "DeleteRole bound",
  },
  {
    rpc: "v1.RoleBindingsService/List",
    call: (c) => c.roleBindings.list({}),
    twin: "ListRoleBindings",
  },
  {
    rpc: "v1.RoleBindingsService/List under A",
    call: (c, fx) => c.roleBindings.list({ uidp: { descendantsOf: fx.org } }),
    twin: "ListRoleBindings",
  },
  {
    rpc: "v1.RoleBindingsService/List by id",
    call: (c, fx) => c.roleBindings.list({ id: fx.binding }),
    twin: "GetRoleBinding",
    byId: true,
  },
  {
    rpc: "v1.RoleBindingsService/Create",
    call: (c, fx) =>
      c.roleBindings.create({
        parent: fx.group,
        roleBinding: { identity: fx.identity, role: viewer.uid },
      }),
    twin: "CreateRoleBinding",
  },
  {
    rpc: "v1.RoleBindingsService/CreateBatch",
    call: (c, fx) =>
      c.roleBindings.createBatch({
        parent: fx.group,
        roleBindings: [{ identity: fx.identity, role: viewer.uid }],
      }),
    twin: "CreateRoleBinding",
  },
  {
    rpc: "v1.RoleBindingsService/Update",
    call: (c, fx) => c.roleBindings.update({ id: fx.binding, role: editor.uid }),
    twin: "UpdateRoleBinding",
  },
  {
    rpc: "v1.RoleBindingsService/Delete",
    call: (c, fx) => c.roleBindings.delete({ id: fx.binding }),
    twin: "DeleteRoleBinding",
  },
  {
    rpc: "v1.RoleBindingsService/Delete missing",
    call: (c, fx) => c.roleBindings.delete({ id: fx.missing }),
    twin: "DeleteRoleBinding missing",
  },
  {
    rpc: "v1.IdentityProvidersService/List",
    call: (c) => c.identityProviders.list({}),
    twin: "ListIdentityProviders",
  },
  {
    rpc: "v1.IdentityProvidersService/List under A",
    call: (c, fx) => c.identityProviders.list({ uidp: { descendantsOf: fx.org } }),
    twin: "ListIdentityProviders under A",
  },
  {
    rpc: "v1.IdentityProvidersService/List by id",
    call: (c, fx) => c.identityProviders.list({ id: fx.provider }),
    twin: "GetIdentityProvider",
    byId: true,
  },
  {
    rpc: "v1.IdentityProvidersService/List by missing id",
    call: (c, fx) => c.identityProviders.list({ id: fx.missing }),
    twin: "GetIdentityProvider missing",
    byId: true,
  },
  {
    rpc: "v1.IdentityProvidersService/Create",
    call: (c, fx) =>
      c.identityProviders.create({
        parentId: fx.group,
        identityProvider: {
          name: "new",
          defaultRole: viewer.uid,
          configuration: {
            case: "oidc",
            value: { issuer: "https://idp.test", clientId: "c", clientSecret: `${secret}-new` },
          },
        },
      }),
    twin: "CreateIdentityProvider",
  },
  {
    rpc: "v1.IdentityProvidersService/Update",
    call: (c, fx) =>
      c.identityProviders.update({
        id: fx.provider,
        name: "renamed",
        defaultRole: viewer.uid,
        configuration: {
          case: "oidc",
          value: { issuer: "https://idp.test", clientId: "gatehouse" },
        },
      }),
    twin: "UpdateIdentityProvider",
  },
  {
    rpc: "v1.IdentityProvidersService/Update missing",
    call: (c, fx) =>
      c.identityProviders.update({
        id: fx.missing,
        name: "renamed",
        defaultRole: viewer.uid,
        configuration: {
          case: "oidc",
          value: { issuer: "https://idp.test", clientId: "gatehouse" },
        },
      }),
    twin: "UpdateIdentityProvider missing",
  },
  {
    rpc: "v1.IdentityProvidersService/Delete",
    call: (c, fx) => c.identityProviders.delete({ id: fx.provider }),
    twin: "DeleteIdentityProvider",
  },
  {
    rpc: "v1.IdentityProvidersService/Delete missing",
    call: (c, fx) => c.identityProviders.delete({ id: fx.missing }),
    twin: "DeleteIdentityProvider missing",
  },
  {
    rpc: "v1.GroupAccountAssociationsService/List",
    call: (c) => c.accountAssociations.list({}),
    twin: "ListAccountAssociations",
  },
  {
    rpc: "v1.GroupAccountAssociationsService/List by group",
    call: (c, fx) => c.accountAssociations.list({ group: fx.association }),
    twin: "GetAccountAssociation",
    byId: true,
  },
  {
    rpc: "v1.GroupAccountAssociationsService/List by group without",
    call: (c, fx) => c.accountAssociations.list({ group: fx.leaf }),
    twin: "GetAccountAssociation missing",
    byId: true,
  },
  {
    rpc: "v1.GroupAccountAssociationsService/Create",
    call: (c, fx) =>
      c.accountAssociations.create({ group: fx.leaf, amazon: { account: "123456789012" } }),
    twin: "CreateAccountAssociation",
  },
  {
    rpc: "v1.GroupAccountAssociationsService/Create second",
    call: (c, fx) =>
      c.accountAssociations.create({ group: fx.group, amazon: { account: "123456789012" } }),
    twin: "CreateAccountAssociation second",
  },
  {
    rpc: "v1.GroupAccountAssociationsService/Update",
    call: (c, fx) =>
      c.accountAssociations.update({
        group: fx.association,
        description: "x",
        amazon: { account: "123456789012" },
      }),
    twin: "UpdateAccountAssociation",
  },
  {
    rpc: "v1.GroupAccountAssociationsService/Update missing",
    call: (c, fx) =>
      c.accountAssociations.update({
        group: fx.leaf,
        description: "x",
        amazon: { account: "123456789012" },
      }),
    twin: "UpdateAccountAssociation missing",
  },
  {
    rpc: "v1.GroupAccountAssociationsService/Delete",
    call: (c, fx) => c.accountAssociations.delete({ group: fx.association }),
    twin: "DeleteAccountAssociation",
  },
  {
    rpc: "v1.GroupAccountAssociationsService/Delete missing",
    call: (c, fx) => c.accountAssociations.delete({ group: fx.leaf }),
    twin: "DeleteAccountAssociation missing",
  },
  {
    rpc: "v1.GroupInvitesService/List",
    call: (c) => c.groupInvites.list({}),
    twin: "ListGroupInvites",
  },
  {
    rpc: "v1.GroupInvitesService/List of A's group",
    call: (c, fx) => c.groupInvites.list({ group: fx.group }),
    twin: "ListGroupInvites under A",
  },
  {
    rpc: "v1.GroupInvitesService/List by id",
    call: (c, fx) => c.groupInvites.list({ id: fx.invite }),
    twin: "GetGroupInvite",
    byId: true,
  },
  {
    rpc: "v1.GroupInvitesService/List by missing id",
    call: (c, fx) => c.groupInvites.list({ id: fx.missing }),
    twin: "GetGroupInvite missing",
    byId: true,
  },
  {
    rpc: "v1.GroupInvitesService/Create",
    call: (c, fx) => c.groupInvites.create({ group: fx.group, role: viewer.uid }),
    twin: "CreateGroupInvite",
  },
  {
    rpc: "v1.GroupInvitesService/Delete",
    call: (c, fx) => c.groupInvites.delete({ id: fx.invite }),
    twin: "DeleteGroupInvite",
  },
  {
    rpc: "v1.GroupInvitesService/Delete missing",
    call: (c, fx) => c.groupInvites.delete({ id: fx.missing }),
    twin: "DeleteGroupInvite missing",
  },
  { rpc: "v1.RegistryService/ListRepos", call: (c) => c.registry.listRepos({}), twin: "ListRepos" },
  {
    rpc: "v1.RegistryService/ListRepos under A",
    call: (c, fx) => c.registry.listRepos({ uidp: { descendantsOf: fx.org } }),
    twin: "ListRepos under A",
  },
  {
    rpc: "v1.RegistryService/ListRepos by id",
    call: (c, fx) => c.registry.listRepos({ id: fx.repo }),
    twin: "GetRepo",
    byId: true,
  },
  {
    rpc: "v1.RegistryService/ListRepos by missing id",
    call: (c, fx) => c.registry.listRepos({ id: fx.missing }),
    twin: "GetRepo missing",
    byId: true,
  },
  {
    rpc: "v1.RegistryService/CreateRepo",
    call: (c, fx) => c.registry.createRepo({ parentId: fx.group, repo: { name: "new" } }),
    twin: "CreateRepo",
  },
  {
    rpc: "v1.RegistryService/UpdateRepo",
    call: (c, fx) => c.registry.updateRepo({ id: fx.repo, name: "renamed" }),
    twin: "UpdateRepo",
  },
  {
    rpc: "v1.RegistryService/UpdateRepo missing",
    call: (c, fx) => c.registry.updateRepo({ id: fx.missing, name: "renamed" }),
    twin: "UpdateRepo missing",
  },
  {
    rpc: "v1.RegistryService/DeleteRepo",
    call: (c, fx) => c.registry.deleteRepo({ id: fx.emptyRepo }),
    twin: "DeleteRepo",
  },
  {
    rpc: "v1.RegistryService/DeleteRepo with tags",
    call: (c, fx) => c.registry.deleteRepo({ id: fx.repo }),
    twin: "DeleteRepo with tags",
  },
  {
    rpc: "v1.RegistryService/DeleteRepo missing",
    call: (c, fx) => c.registry.deleteRepo({ id: fx.missing }),
    twin: "DeleteRepo missing",
  },
  { rpc: "v1.RegistryService/ListTags", call: (c) => c.registry.listTags({}), twin: "ListTags" },
  {
    rpc: "v1.RegistryService/ListTags of A's repo",
    call: (c, fx) => c.registry.listTags({ uidp: { childrenOf: fx.repo } }),
    twin: "ListTags of A's repo",
  },
  {
    rpc: "v1.RegistryService/ListTags by id",
    call: (c, fx) => c.registry.listTags({ id: fx.tag }),
    twin: "GetTag",
    byId: true,
  },
  {
    rpc: "v1.RegistryService/ListTags by missing id",
    call: (c, fx) => c.registry.listTags({ id: `${fx.repo}/ffffffffffffffff` }),
    twin: "GetTag missing",
    byId: true,
  },
  {
    rpc: "v1.RegistryService/CreateTag",
    call: (c, fx) =>
      c.registry.createTag({ repoId: fx.repo, tag: { name: "new", digest: digestOf("b") } }),
    twin: "CreateTag",
  },
  {
    rpc: "v1.RegistryService/UpdateTag",
    call: (c, fx) => c.registry.updateTag({ id: fx.tag, digest: digestOf("c") }),
    // A move: the v2 CreateTag of the tag's own name.
    twin: "CreateTag move",
  },
  {
    rpc: "v1.RegistryService/UpdateTag missing",
    call: (c, fx) =>
      c.registry.updateTag({ id: `${fx.repo}/ffffffffffffffff`, digest: digestOf("c") }),
    // It reads the tag first, as v2 GetTag would.
    twin: "GetTag missing",
  },
  {
    rpc: "v1.RegistryService/DeleteTag",
    call: (c, fx) => c.registry.deleteTag({ id: fx.tag }),
    twin: "DeleteTag",
  },
  {
    rpc: "v1.RegistryService/DeleteTag missing",
    call: (c, fx) => c.registry.deleteTag({ id: `${fx.repo}/ffffffffffffffff` }),
    twin: "DeleteTag missing",
  },
  { rpc: "v1.AdvisoriesService/List", call: (c) => c.advisories.list({}), twin: "ListAdvisories" },
  {
    rpc: "v1.AdvisoriesService/List by id",
    call: (c, fx) => c.advisories.list({ id: fx.advisory }),
    twin: "GetAdvisory",
    byId: true,
  },
  {
    rpc: "v1.AdvisoriesService/List by missing id",
    call: (c, fx) => c.advisories.list({ id: fx.missing }),
    twin: "GetAdvisory missing",
    byId: true,
  },
  {
    rpc: "v1.AdvisoriesService/Create",
    call: (c, fx) => c.advisories.create({ parentId: fx.group, advisory: { advisoryId: "NEW-1" } }),
    twin: "CreateAdvisory",
  },
  {
    rpc: "v1.AdvisoriesService/Update",
    call: (c, fx) => c.advisories.update({ id: fx.advisory, advisoryId: "RENAMED-1" }),
    twin: "UpdateAdvisory",
  },
  {
    rpc: "v1.AdvisoriesService/Update missing",
    call: (c, fx) => c.advisories.update({ id: fx.missing, advisoryId: "RENAMED-1" }),
    twin: "UpdateAdvisory missing",
  },
  {
    rpc: "v1.AdvisoriesService/Delete",
    call: (c, fx) => c.advisories.delete({ id: fx.advisory }),
    twin: "DeleteAdvisory",
  },
  {
    rpc: "v1.AdvisoriesService/Delete missing",
    call: (c, fx) => c.advisories.delete({ id: fx.missing }),
    twin: "DeleteAdvisory missing",
  },
];

for (const v of v1rpcs) {
  const twin = rpcs.find((r) => r.rpc === v.twin);
  if (!twin) throw new Error(`${v.rpc}: no v2 row ${v.twin}`);
  // A List by id answers OK (found or empty) to every authenticated caller.
  const expect = v.byId ? list : twin.expect;
  rpcs.push({
    rpc: v.rpc,
    call: (c, fx) => v.call(c.v1, fx),
    expect,
    twin: v.twin,
    ...(v.byId ? { byId: twin.expect, list: true as const } : {}),
    ...(twin.list ? { list: true as const } : {}),
    ...(twin.unchanged ? { unchanged: true as const } : {}),
  });
}

// The v1 lookups have no v2 twin that answers alike: rows of their own. LookupGroup answers
// each caller its own organization (B's owner, B's), NOT_FOUND to one that may list no group;
// Lookup shows A's workload only to those who may list A's identities, and to everyone else
// the NOT_FOUND of an identity that does not exist.
rpcs.push(
  {
    rpc: "v1.GroupsService/LookupGroup",
    call: (c) => c.v1.groups.lookupGroup({}),
    expect: { ownerA: 0, viewerA: 0, advisorA: 5, ownerB: 0, unbound: 5, anonymous: 16 },
  },
  {
    rpc: "v1.IdentitiesService/Lookup",
    call: async (c, fx) => {
      const match = (await ts.store.getIdentity(fx.identity))?.claimMatch;
      return c.v1.identities.lookup({ issuer: match?.issuer ?? "", subject: match?.subject ?? "" });
    },
    expect: { ownerA: 0, viewerA: 0, advisorA: 5, ownerB: 5, unbound: 5, anonymous: 16 },
  },
);

let ts: InMemoryServer;
let orgA: TestOrg;
let orgB: TestOrg;
const clients = {} as Record<CallerName, Clients>;
const uids = {} as Record<CallerName, string>;

// The fixtures that cells which change nothing share, one of each per server: the reads', and
// the refusals' (a call whose expected answer is an error changes nothing by contract, and one
// that did would fail its own cell, answering OK). Only a write expected to succeed needs a
// fresh one: 106 of the 1,410 cells of a backend, where every write (792) had one, and a
// fixture is about thirty writes to the store (the refusals were 70% of the matrix's time).
const sharedFixtures = new Map<"read" | "refusal", Promise<Fixture>>();
/** The shared fixtures' subscriptions, which later fixtures leave in place. */
const sharedSubscriptions = new Set<string>();
/** A's events as the last cell that counted them left them (see the cells). */
let lastAll: number | undefined;
/** Whether a row only reads (a List or a Get, v2 or v1), so it may share a fixture. */
const readsOnly = (rpc: string) => /^(v1\.\w+\/)?(List|Get)/.test(rpc);

async function setUp(backend: Backend): Promise<void> {
  sharedFixtures.clear();
  sharedSubscriptions.clear();
  lastAll = undefined;
  // Every allowed CreateIdentityProvider of the matrix, over every protocol, stays in A: more
  // than the default bound of providers per organization.
  ts = await startInMemory(
    { GATEHOUSE_MAX_IDENTITY_PROVIDERS_PER_ORG: "1000" },
    { store: storeOn(backend) },
  );
  orgA = await ts.makeOrg(`${secret}-org`);
  orgB = await ts.makeOrg("bravo");
  const viewerA = await ts.makeIdentity(orgA.uid, ["viewer"]);
  const advisorA = await ts.makeIdentity(orgA.uid, ["advisories.admin"]);
  const unbound = await ts.makeIdentity(orgA.uid);
  // Organization B has data of its own, so that its lists are not trivially empty.
  const bGroup = newChildUid(orgB.uid);
  await ts.store.createGroup({
    uid: bGroup,
    parentUid: orgB.uid,
    name: "b-team",
    description: "",
    now: 1,
  });
  await ts.makeIdentity(bGroup, ["viewer"]);
  const bRepo = newChildUid(bGroup);
  await ts.store.createRepo({
    uid: bRepo,
    groupUid: bGroup,
    name: "b-app",
    description: "",
    aliases: [],
    now: 1,
  });
  await ts.store.putTag(
    bRepo,
    { name: "b-latest", digest: digestOf("a"), deprecated: false },
    () => newChildUid(bRepo),
    1,
  );
  await ts.store.createAdvisory(newChildUid(bGroup), bGroup, advisoryContent("B-1"), 1);
  const headers: Record<CallerName, Record<string, string>> = {
    ownerA: orgA.owner.headers,
    viewerA: viewerA.headers,
    advisorA: advisorA.headers,
    ownerB: orgB.owner.headers,
    unbound: unbound.headers,
    anonymous: {},
  };
  for (const name of callers) {
    const api = ts.clients(headers[name]);
    clients[name] = {
      ...iamOf(api),
      repos: api.repos,
      tags: api.tags,
      advisories: api.advisories,
      access: api.access,
      events: api.events,
      people: api.people,
      v1: v1Of(api),
    };
  }
  Object.assign(uids, {
    ownerA: orgA.owner.uid,
    viewerA: viewerA.uid,
    advisorA: advisorA.uid,
    ownerB: orgB.owner.uid,
    unbound: unbound.uid,
    anonymous: viewerA.uid,
  });
}

let n = 0;
async function fixture(): Promise<Fixture> {
  const { store } = ts;
  const org = orgA.uid;
  const now = Date.now();
  const group = newChildUid(org);
  const leaf = newChildUid(org);
  await store.createGroup({
    uid: group,
    parentUid: org,
    name: `${secret}-g${++n}`,
    description: "",
    now,
  });
  await store.createGroup({
    uid: leaf,
    parentUid: org,
    name: `${secret}-l${n}`,
    description: "",
    now,
  });
  const identity = await ts.makeIdentity(group);
  await store.updateIdentity(identity.uid, { name: `${secret}-i${n}` }, now);
  const role = newChildUid(org);
  const freeRole = newChildUid(org);
  for (const uid of [role, freeRole]) {
    await store.createRole({
      uid,
      groupUid: org,
      name: `${secret}-r${n}`,
      description: secret,
      capabilities: ["groups.list"],
      now,
    });
  }
  const binding = newChildUid(group);
  await store.createRoleBinding({
    uid: binding,
    groupUid: group,
    identityUid: identity.uid,
    roleUid: role,
    now,
  });
  const team = newChildUid(group);
  await store.createTeam({
    uid: team,
    groupUid: group,
    name: `${secret}-team${n}`,
    description: "",
    now,
  });
  await store.addTeamMembers(team, [identity.uid], now);
  const repo = newChildUid(group);
  const emptyRepo = newChildUid(group);
  for (const [uid, name] of [
    [repo, `${secret}-repo${n}`],
    [emptyRepo, `${secret}-empty${n}`],
  ] as const) {
    await store.createRepo({ uid, groupUid: group, name, description: "", aliases: [], now });
  }
  const tagName = `${secret}-t${n}`;
  const { tag } = await store.putTag(
    repo,
    { name: tagName, digest: digestOf("a"), deprecated: false },
    () => newChildUid(repo),
    now,
  );
  const advisory = newChildUid(group);
  await store.createAdvisory(advisory, group, advisoryContent(`${secret}-${n}`), now);
  const provider = newChildUid(group);
  await store.createIdentityProvider({
    uid: provider,
    groupUid: group,
    name: `${secret}-idp${n}`,
    description: "",
    defaultRole: viewer.uid,
    writerUid: "",
    oidc: {
      issuer: "https://idp.test",
      clientId: "gatehouse",
      clientSecret: `${secret}-client-secret`,
      additionalScopes: [],
      groupsClaim: "",
    },
    now,
  });
  await store.createAccountAssociation({
    uid: group,
    name: `${secret}-accounts${n}`,
    description: "",
    amazon: { account: "123456789012" },
    now,
  });
  const invite = newChildUid(group);
  const inviteCode = `${secret}-code-${n}-${Math.random()}`;
  await store.createGroupInvite({
    uid: invite,
    groupUid: group,
    roleUid: viewer.uid,
    email: "",
    singleUse: false,
    codeHash: hashCode(inviteCode),
    creatorUid: orgA.owner.uid,
    expirationTime: now + 3_600_000,
    now,
  });
  const accessRequest = newChildUid(group);
  await store.createAccessRequest({
    uid: accessRequest,
    groupUid: group,
    roleUid: editor.uid,
    requesterUid: identity.uid,
    durationMs: 3_600_000,
    reason: `${secret}-reason`,
    expirationTime: now + 3_600_000,
    now,
  });
  // An organization has at most 100 subscriptions: the earlier cells' go, but the shared
  // fixtures'.
  const earlier = await store.listSubscriptions({
    descendantsOf: org,
    filters: {},
    order: { field: "create_time", desc: false },
    skip: 0,
    limit: 200,
  });
  for (const s of earlier.items) {
    if (!sharedSubscriptions.has(s.uid)) await store.deleteSubscription(s.uid);
  }
  const subscription = newChildUid(group);
  const subscriptionSecret = `${secret}-whsec-${n}-${Math.random()}`;
  await store.createSubscription({
    uid: subscription,
    groupUid: group,
    name: `${secret}-hook${n}`,
    description: secret,
    ...hook,
    secret: subscriptionSecret,
    now,
  });
  const person = await store.upsertPerson({
    uid: newRootUid(),
    issuer: "https://users.test",
    subject: `${secret}-person-${n}`,
    name: `${secret}-p${n}`,
    email: `${secret}-${n}@a.test`,
    now,
  });
  await store.createRoleBinding({
    uid: newChildUid(group),
    groupUid: group,
    identityUid: person.uid,
    roleUid: viewer.uid,
    now,
  });
  const session = `${secret}-session-${n}`;
  await store.createAuthorizationCode({
    codeHash: `${secret}-code-hash-${n}-${Math.random()}`,
    sessionId: session,
    identityUid: person.uid,
    clientId: "gatehouse-cli",
    redirectUri: "http://127.0.0.1/callback",
    codeChallenge: "x",
    expireTime: now + 3_600_000,
    now,
  });
  return {
    person: person.uid,
    session,
    org,
    group,
    leaf,
    identity: identity.uid,
    role,
    freeRole,
    binding,
    team,
    missing: `${org}/ffffffffffffffff`,
    repo,
    emptyRepo,
    tag: tag.uid,
    tagName,
    advisory,
    provider,
    association: group,
    invite,
    inviteCode,
    accessRequest,
    subscription,
    subscriptionSecret,
  };
}

/** The content of a bare advisory named `advisoryId`. */
function advisoryContent(advisoryId: string) {
  return {
    advisoryId,
    aliases: [],
    summary: "",
    artifactName: "",
    componentName: "",
    componentType: "",
    severities: [],
    events: [],
  };
}

/** Everything of organization A that must never reach a caller outside it. */
function secretsOf(fx: Fixture): string[] {
  return [
    secret,
    fx.org,
    fx.group,
    fx.leaf,
    fx.identity,
    fx.role,
    fx.freeRole,
    fx.binding,
    fx.team,
    fx.repo,
    fx.emptyRepo,
    fx.tag,
    fx.advisory,
    fx.provider,
    fx.association,
    fx.invite,
    fx.accessRequest,
    fx.subscription,
    fx.subscriptionSecret,
    fx.person,
    fx.session,
  ];
}

const cells = rpcs.flatMap((r) =>
  callers.map(
    (caller) =>
      [
        r.rpc,
        caller,
        caller === "advisorA" ? (r.expect.advisorA ?? r.expect.unbound) : r.expect[caller],
        r,
      ] as const,
  ),
);

describe.each(backends)("cross-organization matrix on %s", (backend) => {
  beforeAll(() => setUp(backend));
  afterAll(async () => {
    await ts?.close();
  });

  it.each(cells)("%s by %s: code %i", async (_rpc, caller, code, r) => {
    const shared = readsOnly(r.rpc) ? "read" : code !== 0 ? "refusal" : undefined;
    if (shared && !sharedFixtures.has(shared)) {
      sharedFixtures.set(
        shared,
        fixture().then((fx) => {
          sharedSubscriptions.add(fx.subscription);
          return fx;
        }),
      );
    }
    const fx = shared ? await sharedFixtures.get(shared)! : await fixture();
    const audit = auditOf(r, caller);
    // A cell expected to change nothing counts A's events only: if their number holds, no event
    // was added, its type's and caller's included (events are only ever appended). A count
    // before is the previous cell's after when that cell counted too and ran to its end: in
    // between only this cell's fixture is written, to the store, outside any RPC, so nothing
    // records an event, and a count that moved anyway fails this cell, never passes it.
    const changes = code === 0 && !r.unchanged;
    const last = lastAll;
    lastAll = undefined;
    const before = audit && (await audit.counts(changes, last));
    let answer: unknown;
    let got: Code | 0 = 0;
    try {
      answer = await r.call(clients[caller], fx, uids[caller]);
    } catch (e) {
      const err = connectErr(e);
      got = err.code;
      answer = err.message;
    }
    expect(got).toBe(code);
    if (r.byId && got === 0) {
      // Found exactly where the v2 Get answers it; else an empty list.
      const byId = caller === "advisorA" ? (r.byId.advisorA ?? r.byId.unbound) : r.byId[caller];
      expect((answer as { items: unknown[] }).items).toHaveLength(byId === 0 ? 1 : 0);
    }
    if (audit && before) {
      // A change records exactly one event, of its RPC's type and by its caller (organization
      // A's audit trail, as its owner reads it); a refused one records nothing.
      const after = await audit.counts(changes);
      const added = got === 0 && !r.unchanged ? 1 : 0;
      expect(after).toEqual({ all: before.all + added, mine: before.mine + added });
      lastAll = after.all;
      // The type a subscriber reads in the docs is the one recorded, over v1 as over v2.
      if (got === 0) expect(documentedTypes).toContain(audit.type);
    }
    if (insideA.includes(caller) || r.invited) return;
    // Outside organization A: nothing of it, in any answer, error messages included (a uid
    // the caller sent may be echoed back only in the request-shaped part of an error).
    const text = typeof answer === "string" ? answer : JSON.stringify(toPlain(answer));
    for (const s of secretsOf(fx)) {
      if (typeof answer === "string" && s !== secret) continue;
      expect(text).not.toContain(s);
    }
    if (r.list && answer && typeof answer === "object" && "totalCount" in answer) {
      // totalCount counts only what the caller may list: what the page shows.
      const page = answer as { totalCount: bigint } & Record<string, unknown>;
      const items = Object.values(page).find(Array.isArray) as unknown[];
      expect(page.totalCount).toBe(BigInt(items.length));
    }
  });

  it("checks the event of every mutating RPC of the API (a new RPC without a row fails)", () => {
    const names = new Set(rpcs.map((r) => r.rpc.split(" ")[0]));
    // The STS exchange needs an issuer's token: test/sts/exchange.test.ts checks its event.
    const exempt = new Set(["Exchange"]);
    // The v2beta1 services and the STS.
    for (const { service } of serviceEntries.filter((e) => !e.adapter)) {
      for (const method of service.methods) {
        if (isMutating(method) && !exempt.has(method.name)) expect(names).toContain(method.name);
      }
    }
    // Every mutating v1 RPC has a row that changes something (its twin is a v2 change), so a
    // cell checks the type it records, not only that a refusal records nothing.
    for (const service of v1Services) {
      for (const method of service.methods.filter(isMutating)) {
        const name = `v1.${service.name}/${method.name}`;
        const typed = rpcs.filter((r) => r.rpc.split(" ")[0] === name && auditOf(r, "ownerA"));
        expect(
          typed.map((r) => auditOf(r, "ownerA")!.type).filter((t) => t !== none),
          name,
        ).not.toEqual([]);
      }
    }
  });

  it("documents the type of every mutating v2 RPC in docs/events.md", () => {
    for (const { service } of serviceEntries.filter((e) => !e.adapter)) {
      for (const method of service.methods.filter(isMutating)) {
        expect(documentedTypes, method.name).toContain(eventTypeOf(service, method));
      }
    }
  });

  it("covers every RPC of the services it names", () => {
    const names = new Set(rpcs.map((r) => r.rpc.split(" ")[0]));
    for (const svc of v1Services) {
      for (const m of svc.methods) {
        expect(names).toContain(`v1.${svc.name}/${m.name}`);
      }
    }
    const { v1: _, ...v2Clients } = clients.ownerA;
    for (const service of Object.values(v2Clients)) {
      for (const method of Object.keys(service)) {
        expect(names).toContain(method[0]!.toUpperCase() + method.slice(1));
      }
    }
  });
});

/** The event types docs/events.md names, which a subscriber subscribes to. */
const documentedTypes = new Set(
  readFileSync(new URL("../../docs/events.md", import.meta.url), "utf8").match(
    /dev\.gatehouse\.[a-z0-9_]+\.[a-z0-9_]+\.[a-z0-9_]+\.v[0-9]+/g,
  ),
);

/** The type of a change that has none: a v1 row whose twin changes nothing (it is refused). */
const none = "none";

/**
 * The event type a row's change records, or undefined for a read: a v2 RPC's own, derived
 * from its descriptor; a v1 RPC's is its v2 twin's (v1 has no types of its own).
 */
function typeOf(r: RpcCase): string | undefined {
  if (r.records !== undefined) return r.records;
  const name = r.rpc.split(" ")[0]!;
  const v1 = /^v1\.(\w+)\/(\w+)$/.exec(name);
  if (v1) {
    const service = v1Services.find((s) => s.name === v1[1]);
    const method = service?.methods.find((m) => m.name === v1[2]);
    if (!method) throw new Error(`${r.rpc}: no such v1 RPC`);
    if (!isMutating(method)) return undefined;
    const twin = rpcs.find((x) => x.rpc === r.twin);
    if (!twin) throw new Error(`${r.rpc}: no v2 row ${r.twin}`);
    return (twin.twin === undefined && typeOf(twin)) || none;
  }
  const service = apiServices.find((s) => s.methods.some((m) => m.name === name));
  const method = service?.methods.find((m) => m.name === name);
  if (!service || !method || !isMutating(method)) return undefined;
  return eventTypeOf(service, method);
}

/** For a mutating RPC: the counts of A's events, all and of this RPC's type by `caller`. */
function auditOf(r: RpcCase, caller: CallerName) {
  const type = typeOf(r);
  if (type === undefined) return undefined;
  // A's trail as its owner reads it, and B's as B's owner does (an organization B's owner
  // creates is B's owner's too).
  const count = async (q: { type?: string; actor?: string }) => {
    const pages = await Promise.all(
      (["ownerA", "ownerB"] as const).map((o) =>
        clients[o].events.listEvents({ pageSize: 1, ...q }),
      ),
    );
    return pages.reduce((total, page) => total + Number(page.totalCount), 0);
  };
  return {
    type,
    /** A's events, all (unless `all` is known) and, for a call that `changes`, the caller's. */
    counts: async (changes: boolean, all?: number) => {
      const [a, mine] = await Promise.all([
        all ?? count({}),
        changes ? count({ type, actor: uids[caller] || "-" }) : 0,
      ]);
      return { all: a, mine };
    },
  };
}

function toPlain(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v ?? null, (_k, x) => (typeof x === "bigint" ? String(x) : x)));
}
