import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { builtinRoles, capabilities, ownerRole } from "../../src/auth/capabilities.js";
import { serviceEntries } from "../../src/service-table.js";
import { newChildUid } from "../../src/uid.js";
import { outcome } from "../helpers/connect-errors.js";
import type { IamClients } from "../helpers/iam-clients.js";
import { iamOf, useInMemory, v1Of } from "../helpers/in-memory.js";
import { backends, storeOn } from "../helpers/in-memory-backends.js";
import type { TestCaller, TestOrg } from "../helpers/test-orgs.js";
import type { V1Clients } from "../helpers/v1-clients.js";

// Policy, not protocol: served in memory (helpers/in-memory.ts), the server's own access
// control and handlers without a socket.

/** Every v1 service: the service table's adapters. */
const v1Services = serviceEntries.filter((e) => e.adapter).map((e) => e.service);

const viewer = builtinRoles.find((r) => r.name === "viewer")!;
// What the admin holds: enough to manage bindings and roles, far from owner.
const adminCaps = [
  "groups.list",
  "identities.list",
  "roles.list",
  "roles.create",
  "roles.update",
  "role_bindings.list",
  "role_bindings.create",
  "role_bindings.update",
];

describe.each(backends)("escalation on %s", (backend) => {
  let org: TestOrg;
  let team: string;
  let adminRole: string;
  let narrowRole: string;
  let admin: TestCaller;
  let teamAdmin: TestCaller;
  let target: TestCaller;
  let asAdmin: IamClients;
  let asTeamAdmin: IamClients;
  let v1Admin: V1Clients;
  let v1TeamAdmin: V1Clients;

  const ts = useInMemory({}, { store: storeOn(backend) });
  beforeAll(async () => {
    org = await ts.makeOrg("escalation");
    const now = Date.now();
    team = newChildUid(org.uid);
    await ts.store.createGroup({
      uid: team,
      parentUid: org.uid,
      name: "team",
      description: "",
      now,
    });
    adminRole = newChildUid(org.uid);
    await ts.store.createRole({
      uid: adminRole,
      groupUid: org.uid,
      name: "admin",
      description: "",
      capabilities: adminCaps,
      now,
    });
    narrowRole = newChildUid(org.uid);
    await ts.store.createRole({
      uid: narrowRole,
      groupUid: org.uid,
      name: "narrow",
      description: "",
      capabilities: ["groups.list"],
      now,
    });
    admin = await ts.makeIdentity(org.uid, [adminRole]);
    // Bound below the root only.
    teamAdmin = await ts.makeIdentity(team, [adminRole]);
    target = await ts.makeIdentity(team);
    asAdmin = iamOf(ts.clients(admin.headers));
    asTeamAdmin = iamOf(ts.clients(teamAdmin.headers));
    v1Admin = v1Of(ts.clients(admin.headers));
    v1TeamAdmin = v1Of(ts.clients(teamAdmin.headers));
  });

  const bind = (c: IamClients, parent: string, identityUid: string, roleUid: string) =>
    c.roleBindings.createRoleBinding({ parent, roleBinding: { identityUid, roleUid } });
  const bind1 = (c: V1Clients, parent: string, identity: string, role: string) =>
    c.roleBindings.create({ parent, roleBinding: { identity, role } });

  /** `c`'s caller asks for `roleUid` at `parent` for an hour; returns the request's uid. */
  const ask = async (c: IamClients, parent: string, roleUid: string) =>
    (
      await c.accessRequests.createAccessRequest({
        parent,
        accessRequest: { roleUid, duration: { seconds: 3600n }, reason: "please" },
      })
    ).uid;
  const approve = (c: IamClients, uid: string) => c.accessRequests.approveAccessRequest({ uid });

  describe("no escalation", () => {
    // [attempt, call, expected code]
    const attempts: [string, () => Promise<unknown>, number][] = [
      ["grant owner to itself", () => bind(asAdmin, org.uid, admin.uid, ownerRole.uid), 7],
      ["grant owner to another", () => bind(asAdmin, team, target.uid, ownerRole.uid), 7],
      ["grant viewer (lists it lacks)", () => bind(asAdmin, team, target.uid, viewer.uid), 7],
      [
        "create a role with capabilities it lacks",
        () =>
          asAdmin.roles.createRole({
            parent: org.uid,
            role: { name: "sneaky", capabilities: ["groups.list", "groups.delete"] },
          }),
        7,
      ],
      [
        "widen a custom role with capabilities it lacks",
        () =>
          asAdmin.roles.updateRole({
            role: { uid: narrowRole, capabilities: ["groups.list", "identities.delete"] },
          }),
        7,
      ],
      [
        "bind itself higher up the tree",
        () => bind(asTeamAdmin, org.uid, teamAdmin.uid, adminRole),
        7,
      ],
      [
        "create a role higher up the tree",
        () =>
          asTeamAdmin.roles.createRole({
            parent: org.uid,
            role: { name: "up", capabilities: ["groups.list"] },
          }),
        7,
      ],
      [
        "rebind its own binding to owner",
        async () => {
          const mine = await asAdmin.roleBindings.listRoleBindings({ identity: admin.uid });
          const uid = mine.roleBindings[0]!.uid;
          return asAdmin.roleBindings.updateRoleBinding({
            roleBinding: { uid, roleUid: ownerRole.uid },
          });
        },
        7,
      ],
      // The same through v1: each adapter is refused where its v2 call is.
      ["v1: grant owner to itself", () => bind1(v1Admin, org.uid, admin.uid, ownerRole.uid), 7],
      [
        "v1: grant owner to another in a batch",
        () =>
          v1Admin.roleBindings.createBatch({
            parent: team,
            roleBindings: [{ identity: target.uid, role: ownerRole.uid }],
          }),
        7,
      ],
      ["v1: grant viewer (lists it lacks)", () => bind1(v1Admin, team, target.uid, viewer.uid), 7],
      [
        "v1: create a role with capabilities it lacks",
        () =>
          v1Admin.roles.create({
            parentId: org.uid,
            role: { name: "sneaky1", capabilities: ["groups.list", "groups.delete"] },
          }),
        7,
      ],
      [
        "v1: widen a custom role with capabilities it lacks",
        () =>
          v1Admin.roles.update({
            id: narrowRole,
            name: "narrow",
            capabilities: ["groups.list", "identities.delete"],
          }),
        7,
      ],
      [
        "v1: bind itself higher up the tree",
        () => bind1(v1TeamAdmin, org.uid, teamAdmin.uid, adminRole),
        7,
      ],
      [
        "v1: create a role higher up the tree",
        () =>
          v1TeamAdmin.roles.create({
            parentId: org.uid,
            role: { name: "up1", capabilities: ["groups.list"] },
          }),
        7,
      ],
      [
        "v1: rebind its own binding to owner",
        async () => {
          const mine = await asAdmin.roleBindings.listRoleBindings({ identity: admin.uid });
          const id = mine.roleBindings[0]!.uid;
          return v1Admin.roleBindings.update({ id, role: ownerRole.uid });
        },
        7,
      ],
      // Access requests: an approval is a grant, with the approver's authority, never its own.
      [
        "approve another's request for owner",
        async () => approve(asAdmin, await ask(asTeamAdmin, team, ownerRole.uid)),
        7,
      ],
      [
        "approve its own request, even for a role it holds all of",
        async () => approve(asAdmin, await ask(asAdmin, team, narrowRole)),
        7,
      ],
      [
        "deny its own request",
        async () =>
          asAdmin.accessRequests.denyAccessRequest({ uid: await ask(asAdmin, team, narrowRole) }),
        7,
      ],
      [
        "approve a request higher up the tree",
        async () => approve(asTeamAdmin, await ask(asAdmin, org.uid, narrowRole)),
        7,
      ],
      // Controls: what the admin holds, it may grant.
      [
        "approve another's request for a role it holds all of",
        async () => approve(asAdmin, await ask(asTeamAdmin, team, narrowRole)),
        0,
      ],
      ["grant a role it holds all of", () => bind(asAdmin, team, target.uid, narrowRole), 0],
      [
        "create a role within what it holds",
        () =>
          asAdmin.roles.createRole({
            parent: team,
            role: { name: "ok", capabilities: ["groups.list", "roles.list"] },
          }),
        0,
      ],
      [
        "v1: create a role within what it holds",
        () =>
          v1Admin.roles.create({
            parentId: team,
            role: { name: "ok1", capabilities: ["groups.list", "roles.list"] },
          }),
        0,
      ],
    ];

    it.each(attempts)("%s", async (_what, call, code) => {
      expect(await outcome(call())).toBe(code);
    });

    it("left the admin exactly what it had", async () => {
      const held = await ts.store.capabilitiesAt(admin.uid, [org.uid, team]);
      expect([...held].sort()).toEqual([...adminCaps].sort());
    });
  });

  describe("a canary identity with no bindings", () => {
    it("is never granted anything, whatever others do and whatever it tries", async () => {
      const canary = await ts.makeIdentity(org.uid);
      const asCanary = iamOf(ts.clients(canary.headers));
      const asOwner = iamOf(ts.clients(org.owner.headers));
      const v1Canary = v1Of(ts.clients(canary.headers));
      const groups = [org.uid, team];
      const roles = [...builtinRoles.map((r) => r.uid), adminRole, narrowRole];
      const others = [admin.uid, teamAdmin.uid, target.uid];

      type Step =
        | { kind: "group"; parent: number }
        | { kind: "role"; group: number; caps: string[] }
        | { kind: "bind"; group: number; identity: number; role: number; byAdmin: boolean }
        | { kind: "canary"; group: number; role: number; caps: string[] };
      const index = fc.nat({ max: 1000 });
      const caps = fc.subarray([...capabilities], { minLength: 1, maxLength: 6 });
      // The owner may only put into a role what it holds itself.
      const ownerCaps = fc.subarray([...ownerRole.capabilities], { minLength: 1, maxLength: 6 });
      const step: fc.Arbitrary<Step> = fc.oneof(
        fc.record({ kind: fc.constant("group" as const), parent: index }),
        fc.record({ kind: fc.constant("role" as const), group: index, caps: ownerCaps }),
        fc.record({
          kind: fc.constant("bind" as const),
          group: index,
          identity: index,
          role: index,
          byAdmin: fc.boolean(),
        }),
        fc.record({ kind: fc.constant("canary" as const), group: index, role: index, caps }),
      );
      const pick = <T>(xs: readonly T[], i: number): T => xs[i % xs.length]!;

      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async (steps) => {
          for (const s of steps) {
            if (s.kind === "group") {
              const g = await asOwner.groups.createGroup({
                parent: pick(groups, s.parent),
                group: { name: `g${groups.length}` },
              });
              groups.push(g.uid);
            } else if (s.kind === "role") {
              const r = await asOwner.roles.createRole({
                parent: pick(groups, s.group),
                role: { name: "r", capabilities: s.caps },
              });
              roles.push(r.uid);
            } else if (s.kind === "bind") {
              // Others get bindings (some refused: duplicates, roles from below, escalation).
              await outcome(
                bind(
                  s.byAdmin ? asAdmin : asOwner,
                  pick(groups, s.group),
                  pick(others, s.identity),
                  pick(roles, s.role),
                ),
              );
            } else {
              // The canary tries to help itself; every attempt is refused.
              const group = pick(groups, s.group);
              expect(await outcome(bind(asCanary, group, canary.uid, pick(roles, s.role)))).toBe(7);
              expect(
                await outcome(
                  asCanary.roles.createRole({
                    parent: group,
                    role: { name: "c", capabilities: s.caps },
                  }),
                ),
              ).toBe(7);
              expect(await outcome(asCanary.groups.getGroup({ uid: group }))).toBe(7);
              const seen = await asCanary.groups.listGroups({});
              expect(seen.groups).toEqual([]);
              expect(seen.totalCount).toBe(0n);
              // Through v1 as well: refused, or nothing to see.
              const role = pick(roles, s.role);
              expect(await outcome(bind1(v1Canary, group, canary.uid, role))).toBe(7);
              const batch = [{ identity: canary.uid, role }];
              expect(
                await outcome(
                  v1Canary.roleBindings.createBatch({ parent: group, roleBindings: batch }),
                ),
              ).toBe(7);
              expect(
                await outcome(
                  v1Canary.roles.create({
                    parentId: group,
                    role: { name: "c", capabilities: s.caps },
                  }),
                ),
              ).toBe(7);
              expect((await v1Canary.groups.list({ id: group })).items).toEqual([]);
              expect((await v1Canary.groups.list({})).items).toEqual([]);
            }
          }
          expect(await ts.store.capabilitiesAt(canary.uid, groups)).toEqual(new Set());
          for (const c of capabilities) {
            expect(await ts.store.groupsWithCapability(canary.uid, c)).toEqual([]);
          }
        }),
        { numRuns: 25 },
      );
    });
  });

  describe("taking over a stronger identity", () => {
    // Changing how an identity authenticates hands its powers to whoever matches the new rule.
    let manager: TestCaller;
    let strong: TestCaller;
    let weak: TestCaller;
    let asManager: IamClients;
    beforeAll(async () => {
      const managerRole = newChildUid(org.uid);
      await ts.store.createRole({
        uid: managerRole,
        groupUid: org.uid,
        name: "identity manager",
        description: "",
        capabilities: ["identities.list", "identities.update", "identities.delete"],
        now: Date.now(),
      });
      manager = await ts.makeIdentity(org.uid, [managerRole]);
      strong = await ts.makeIdentity(team, [ownerRole.uid], org.uid);
      weak = await ts.makeIdentity(team);
      asManager = iamOf(ts.clients(manager.headers));
      v1Manager = v1Of(ts.clients(manager.headers));
    });
    let v1Manager: V1Clients;
    const myWorkload = {
      case: "claimMatch" as const,
      value: { issuer: "https://ci.example.com", subject: "repo:mine" },
    };

    it("cannot point an owner's claimMatch at its own workload", async () => {
      const call = asManager.identities.updateIdentity({
        identity: { uid: strong.uid, method: myWorkload },
      });
      expect(await outcome(call)).toBe(7);
      const v1 = v1Manager.identities.update({
        id: strong.uid,
        name: "strong",
        relationship: { case: "claimMatch", value: myWorkload.value },
      });
      expect(await outcome(v1)).toBe(7);
      const after = await ts.store.getIdentity(strong.uid);
      expect(after?.claimMatch?.subject).not.toBe("repo:mine");
    });

    it("may rename that identity, and re-point one with no more powers than its own", async () => {
      const rename = asManager.identities.updateIdentity({
        identity: { uid: strong.uid, name: "renamed" },
      });
      expect(await outcome(rename)).toBe(0);
      const repoint = asManager.identities.updateIdentity({
        identity: { uid: weak.uid, method: myWorkload },
      });
      expect(await outcome(repoint)).toBe(0);
    });

    it("cannot delete that identity, dropping its organization-level binding", async () => {
      const call = asManager.identities.deleteIdentity({ uid: strong.uid });
      expect(await outcome(call)).toBe(7);
      expect(await outcome(v1Manager.identities.delete({ id: strong.uid }))).toBe(7);
      expect(await ts.store.getIdentity(strong.uid)).toBeDefined();
    });

    it("may delete one with no more powers than its own", async () => {
      const other = await ts.makeIdentity(team);
      expect(await outcome(asManager.identities.deleteIdentity({ uid: other.uid }))).toBe(0);
      expect(await ts.store.getIdentity(other.uid)).toBeUndefined();
    });
  });

  describe("an identity with no bindings, through every v1 method", () => {
    // Each v1 method against organization A's resources: a write is refused, a List shows
    // nothing, and nothing changes.
    const calls = (c: V1Clients, me: string): Record<string, () => Promise<unknown>> => {
      const child = `${team}/0000000000000001`;
      return {
        "GroupsService/Create": () => c.groups.create({ parent: team, group: { name: "x" } }),
        "GroupsService/Update": () => c.groups.update({ id: team, name: "x" }),
        "GroupsService/List": () => c.groups.list({ id: team }),
        "GroupsService/Delete": () => c.groups.delete({ id: team }),
        // A lookup finds nothing the caller may not see: NOT_FOUND, as for no such thing.
        "GroupsService/LookupGroup": () => c.groups.lookupGroup({}),
        // Asking needs sight of the group: a caller with no bindings may not even ask.
        "GroupsService/RequestGroupAccess": () => c.groups.requestGroupAccess({ groupId: team }),
        "IdentitiesService/Lookup": async () => {
          const { issuer, subject } = (await ts.store.getIdentity(target.uid))!.claimMatch!;
          return c.identities.lookup({ issuer, subject });
        },
        "IdentitiesService/Create": () =>
          c.identities.create({
            parentId: team,
            identity: {
              name: "x",
              relationship: { case: "claimMatch", value: { issuer: "https://x", subject: "x" } },
            },
          }),
        "IdentitiesService/Update": () => c.identities.update({ id: target.uid, name: "x" }),
        "IdentitiesService/List": () => c.identities.list({ id: target.uid }),
        "IdentitiesService/Delete": () => c.identities.delete({ id: target.uid }),
        "RolesService/Create": () =>
          c.roles.create({ parentId: team, role: { name: "x", capabilities: ["groups.list"] } }),
        "RolesService/Update": () =>
          c.roles.update({ id: narrowRole, name: "x", capabilities: ["groups.list"] }),
        "RolesService/List": () => c.roles.list({ id: narrowRole }),
        "RolesService/Delete": () => c.roles.delete({ id: narrowRole }),
        "RoleBindingsService/Create": () => bind1(c, team, me, ownerRole.uid),
        "RoleBindingsService/CreateBatch": () =>
          c.roleBindings.createBatch({
            parent: team,
            roleBindings: [{ identity: me, role: ownerRole.uid }],
          }),
        "RoleBindingsService/Update": () =>
          c.roleBindings.update({ id: child, role: ownerRole.uid }),
        "RoleBindingsService/List": () => c.roleBindings.list({ uidp: { descendantsOf: org.uid } }),
        "RoleBindingsService/Delete": () => c.roleBindings.delete({ id: child }),
        "IdentityProvidersService/Create": () =>
          c.identityProviders.create({
            parentId: team,
            identityProvider: {
              name: "x",
              defaultRole: ownerRole.uid,
              configuration: { case: "oidc", value: { issuer: "https://x.test", clientId: "c" } },
            },
          }),
        "IdentityProvidersService/Update": () =>
          c.identityProviders.update({ id: child, name: "x" }),
        "IdentityProvidersService/List": () => c.identityProviders.list({}),
        "IdentityProvidersService/Delete": () => c.identityProviders.delete({ id: child }),
        "GroupAccountAssociationsService/Create": () =>
          c.accountAssociations.create({ group: team, amazon: { account: "123456789012" } }),
        "GroupAccountAssociationsService/Update": () =>
          c.accountAssociations.update({ group: team, amazon: { account: "123456789012" } }),
        "GroupAccountAssociationsService/List": () => c.accountAssociations.list({ group: team }),
        "GroupAccountAssociationsService/Delete": () =>
          c.accountAssociations.delete({ group: team }),
        "GroupInvitesService/Create": () =>
          c.groupInvites.create({ group: team, role: ownerRole.uid }),
        "GroupInvitesService/List": () => c.groupInvites.list({ group: team }),
        "GroupInvitesService/Delete": () => c.groupInvites.delete({ id: child }),
        "RegistryService/CreateRepo": () =>
          c.registry.createRepo({ parentId: team, repo: { name: "x" } }),
        "RegistryService/UpdateRepo": () => c.registry.updateRepo({ id: child, name: "x" }),
        "RegistryService/ListRepos": () => c.registry.listRepos({}),
        "RegistryService/DeleteRepo": () => c.registry.deleteRepo({ id: child }),
        "RegistryService/CreateTag": () =>
          c.registry.createTag({
            repoId: child,
            tag: { name: "x", digest: `sha256:${"a".repeat(64)}` },
          }),
        "RegistryService/UpdateTag": () =>
          c.registry.updateTag({ id: `${child}/0000000000000002`, name: "x" }),
        "RegistryService/ListTags": () => c.registry.listTags({}),
        "RegistryService/DeleteTag": () =>
          c.registry.deleteTag({ id: `${child}/0000000000000002` }),
        "AdvisoriesService/Create": () =>
          c.advisories.create({ parentId: team, advisory: { advisoryId: "GO-2024-0001" } }),
        "AdvisoriesService/Update": () =>
          c.advisories.update({ id: child, advisoryId: "GO-2024-0001" }),
        "AdvisoriesService/List": () => c.advisories.list({}),
        "AdvisoriesService/Delete": () => c.advisories.delete({ id: child }),
      };
    };

    it("is refused every write and shown nothing, and holds nothing after", async () => {
      const canary = await ts.makeIdentity(team);
      const c = v1Of(ts.clients(canary.headers));
      const table = calls(c, canary.uid);
      for (const [name, call] of Object.entries(table)) {
        if (name.includes("/List")) {
          const answer = (await call()) as { items: unknown[] };
          expect(answer.items, name).toEqual([]);
        } else if (name.includes("/Lookup")) {
          expect(await outcome(call()), name).toBe(5);
        } else {
          expect(await outcome(call()), name).toBe(7);
        }
      }
      expect(await ts.store.capabilitiesAt(canary.uid, [org.uid, team])).toEqual(new Set());
    });

    it("covers every v1 method", () => {
      const names = Object.keys(calls(v1Of(ts.clients({})), ""));
      for (const svc of v1Services) {
        for (const m of svc.methods) expect(names).toContain(`${svc.name}/${m.name}`);
      }
    });
  });
});
