import { randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { builtinRoles, ownerRole } from "../../src/auth/capabilities.js";
import type { AuditScope } from "../../src/events/audit-scope.js";
import type {
  ClaimMatchRecord,
  RoleBindingFilters,
  StaticKeysRecord,
} from "../../src/store/iam-store.js";
import {
  type GroupRecord,
  type ListQuery,
  type Store,
  StoreError,
  type StoreErrorKind,
} from "../../src/store/store.js";
import { accessRequestCases } from "./access-request-suite.js";
import { inviteCases } from "./invite-suite.js";
import { orgAdminCases } from "./org-admin-suite.js";
import { peopleCases } from "./people-suite.js";
import { registryNamespaceCases } from "./registry-namespace-suite.js";
import { registryCases } from "./registry-suite.js";
import { scimCases } from "./scim-suite.js";
import { signInUpkeepCases } from "./sign-in-upkeep-suite.js";
import { subscriptionCases } from "./subscription-suite.js";
import { teamCases } from "./team-suite.js";

/** A closure row: `ancestor` is `depth` levels above `descendant` (0: the group itself). */
export interface ClosureRow {
  ancestor: string;
  descendant: string;
  depth: number;
}

/** A store under test, and what the suite may look at beyond the interface. */
export interface StoreFixture {
  store: Store;
  /** The closure rows as the backend stores them, for backends that can show them. */
  closureRows?: () => ClosureRow[] | Promise<ClosureRow[]>;
  /** Close the store and remove what it left behind. */
  dispose(): Promise<void>;
}

// Fixed uids, so that tie-breaks by uid are known in advance.
const R1 = "1".repeat(40);
const R2 = "2".repeat(40);
const uids = {
  R1,
  E: `${R1}/eeeeeeeeeeeeeeee`,
  A1: `${R1}/eeeeeeeeeeeeeeee/aaaaaaaaaaaaaaaa`,
  W: `${R1}/eeeeeeeeeeeeeeee/bbbbbbbbbbbbbbbb`,
  O: `${R1}/cccccccccccccccc`,
  A2: `${R1}/cccccccccccccccc/1111111111111111`,
  R2,
  E2: `${R2}/eeeeeeeeeeeeeeee`,
} as const;
type Label = keyof typeof uids;
const labelOf = new Map(Object.entries(uids).map(([label, uid]) => [uid, label as Label]));
const missing = "f".repeat(40);

/**
 * The tree of the list cases. Two organizations are both named "acme" (roots need not be
 * unique); "api" appears under two parents; A1 and W share a create time.
 */
const tree: { label: Label; parent: Label | ""; name: string; t: number }[] = [
  { label: "R1", parent: "", name: "acme", t: 1 },
  { label: "E", parent: "R1", name: "eng", t: 2 },
  { label: "A1", parent: "E", name: "api", t: 3 },
  { label: "W", parent: "E", name: "web", t: 3 },
  { label: "O", parent: "R1", name: "ops", t: 4 },
  { label: "A2", parent: "O", name: "api", t: 5 },
  { label: "R2", parent: "", name: "acme", t: 6 },
  { label: "E2", parent: "R2", name: "eng", t: 7 },
];

/** Build a ListQuery: create_time ascending, no skip, 50 a page, unless `q` says otherwise. */
export function listQuery(q: Partial<ListQuery> = {}): ListQuery {
  return { filters: {}, order: { field: "create_time", desc: false }, skip: 0, limit: 50, ...q };
}

/** Recompute the closure rows from parent links: what the stored closure must equal. */
export function closureFromParents(groups: readonly GroupRecord[]): ClosureRow[] {
  const parentOf = new Map(groups.map((g) => [g.uid, g.parentUid]));
  const rows: ClosureRow[] = [];
  for (const g of groups) {
    let depth = 0;
    for (let a: string | undefined = g.uid; a; a = parentOf.get(a)) {
      rows.push({ ancestor: a, descendant: g.uid, depth: depth++ });
    }
  }
  return sortClosure(rows);
}

/** Sort closure rows into one canonical order, for comparing. */
export function sortClosure(rows: readonly ClosureRow[]): ClosureRow[] {
  const key = (r: ClosureRow) => `${r.descendant} ${r.ancestor}`;
  return [...rows].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/** Expect `fn` to reject with a StoreError of `kind`, and return it. */
export async function storeError(fn: () => Promise<unknown>, kind: StoreErrorKind) {
  const err = await fn().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StoreError);
  expect((err as StoreError).kind).toBe(kind);
  return err as StoreError;
}

/**
 * The contract every Store backend must meet. `makeStore` gives a fresh, empty store for each
 * test.
 */
export function runStoreSuite(name: string, makeStore: () => Promise<StoreFixture>): void {
  describe(`store contract: ${name}`, () => {
    let fx: StoreFixture;
    let store: Store;
    beforeEach(async () => {
      fx = await makeStore();
      store = fx.store;
    });
    afterEach(async () => {
      await fx.dispose();
    });

    const create = (uid: string, parentUid: string, name: string, now = 1, description = "") =>
      store.createGroup({ uid, parentUid, name, description, now });

    async function allGroups(): Promise<GroupRecord[]> {
      return (await store.listGroups(listQuery({ limit: 1000 }))).items;
    }

    /** The closure, as the backend shows it and through getGroupPath, matches the parents. */
    async function expectClosureConsistent(): Promise<void> {
      const groups = await allGroups();
      for (const g of groups) {
        const path = closureFromParents(groups)
          .filter((r) => r.descendant === g.uid)
          .sort((a, b) => b.depth - a.depth)
          .map((r) => r.ancestor);
        expect(await store.getGroupPath(g.uid)).toEqual(path);
      }
      if (fx.closureRows) {
        expect(sortClosure(await fx.closureRows())).toEqual(closureFromParents(groups));
      }
    }

    describe("groups", () => {
      it("creates a root and a child and reads them back", async () => {
        const root = await create(R1, "", "acme", 100, "the org");
        expect(root).toEqual({
          uid: R1,
          parentUid: "",
          name: "acme",
          description: "the org",
          verified: false,
          resourceLimits: {},
          createTime: 100,
          updateTime: 100,
        });
        const child = await create(uids.E, R1, "eng", 200);
        expect(child).toMatchObject({ uid: uids.E, parentUid: R1, name: "eng", createTime: 200 });
        expect(await store.getGroup(R1)).toEqual(root);
        expect(await store.getGroup(uids.E)).toEqual(child);
        expect(await store.getGroup(missing)).toBeUndefined();
      });

      it("refuses a missing parent, a taken uid and a uid that does not extend its parent", async () => {
        await storeError(() => create(uids.E, R1, "eng"), "not_found");
        await create(R1, "", "acme");
        await storeError(() => create(R1, "", "other"), "already_exists");
        await expect(create(`${R2}/eeeeeeeeeeeeeeee`, R1, "eng")).rejects.toThrow();
        await expect(create(uids.A1, R1, "deep")).rejects.toThrow();
        expect(await allGroups()).toHaveLength(1);
      });

      it("updates the fields of the patch and the update time only", async () => {
        await create(R1, "", "acme", 100, "before");
        const renamed = await store.updateGroup(R1, { name: "acme2" }, 200);
        expect(renamed).toMatchObject({
          name: "acme2",
          description: "before",
          createTime: 100,
          updateTime: 200,
        });
        const described = await store.updateGroup(R1, { description: "after" }, 300);
        expect(described).toMatchObject({ name: "acme2", description: "after", updateTime: 300 });
        // A patch that sets nothing changes nothing, update time included.
        expect(await store.updateGroup(R1, {}, 400)).toMatchObject({
          name: "acme2",
          description: "after",
          updateTime: 300,
        });
        expect(await store.getGroup(R1)).toMatchObject({ name: "acme2", updateTime: 300 });
        await storeError(() => store.updateGroup(missing, { name: "x" }, 1), "not_found");
      });

      it("keeps sibling names unique but lets organizations share a name", async () => {
        await create(R1, "", "acme");
        await create(R2, "", "acme");
        await create(uids.E, R1, "eng");
        await create(uids.O, R1, "ops");
        await create(uids.E2, R2, "eng");
        const clash = await storeError(
          () => create(`${R1}/dddddddddddddddd`, R1, "eng"),
          "already_exists",
        );
        // The message names the clash, not the other group.
        expect(clash.message).not.toContain(uids.E);
        await storeError(() => store.updateGroup(uids.O, { name: "eng" }, 2), "already_exists");
        expect(await store.updateGroup(uids.O, { name: "ops" }, 2)).toMatchObject({ name: "ops" });
        expect(await store.updateGroup(R2, { name: "acme" }, 2)).toMatchObject({ name: "acme" });
        await store.updateGroup(R1, { name: "beta" }, 3);
        // R1 took beta's registry namespace: no other organization is renamed to it.
        await storeError(() => store.updateGroup(R2, { name: "beta" }, 3), "already_exists");
      });

      it("deletes a leaf, refuses a group with child groups, and reports a missing one", async () => {
        await create(R1, "", "acme");
        await create(uids.E, R1, "eng");
        const err = await storeError(() => store.deleteGroup(R1), "not_empty");
        expect(err).toMatchObject({ childKind: "groups", parentKind: "group" });
        await store.deleteGroup(uids.E);
        expect(await store.getGroup(uids.E)).toBeUndefined();
        await store.deleteGroup(R1);
        expect(await allGroups()).toEqual([]);
        await storeError(() => store.deleteGroup(R1), "not_found");
      });

      it("finds the first organization of a name, never a subgroup", async () => {
        await create(R2, "", "acme", 20);
        await create(R1, "", "acme", 30);
        await create(uids.E, R1, "eng", 31);
        expect((await store.findOrganization("acme"))?.uid).toBe(R2);
        expect(await store.findOrganization("eng")).toBeUndefined();
        expect(await store.findOrganization("nobody")).toBeUndefined();
      });

      it("lets a name be reused once its group is deleted", async () => {
        await create(R1, "", "acme");
        await create(uids.E, R1, "eng");
        await store.deleteGroup(uids.E);
        await create(`${R1}/dddddddddddddddd`, R1, "eng");
      });
    });

    describe("closure", () => {
      it("holds every ancestor pair, depth 0 included, after each create and delete", async () => {
        for (const g of tree) {
          await create(uids[g.label], g.parent ? uids[g.parent] : "", g.name, g.t);
          await expectClosureConsistent();
        }
        expect(await store.getGroupPath(uids.A1)).toEqual([R1, uids.E, uids.A1]);
        expect(await store.getGroupPath(R2)).toEqual([R2]);
        for (const label of ["A1", "W", "E", "E2"] as const) {
          await store.deleteGroup(uids[label]);
          expect(await store.getGroupPath(uids[label])).toEqual([]);
          await expectClosureConsistent();
        }
        expect(await store.getGroupPath(missing)).toEqual([]);
      });

      it("answers scope (at or below) from the closure", async () => {
        for (const g of tree) {
          await create(uids[g.label], g.parent ? uids[g.parent] : "", g.name, g.t);
        }
        await store.deleteGroup(uids.W);
        const visible = await store.listGroups(listQuery({ scope: [uids.E] }));
        expect(visible.items.map((g) => labelOf.get(g.uid))).toEqual(["E", "A1"]);
      });
    });

    describe("listGroups", () => {
      beforeEach(async () => {
        for (const g of tree) {
          await create(uids[g.label], g.parent ? uids[g.parent] : "", g.name, g.t);
        }
        await store.updateGroup(uids.O, { description: "touched" }, 10);
      });

      const name = (desc = false) => ({ order: { field: "name" as const, desc } });
      const created = (desc = false) => ({ order: { field: "create_time" as const, desc } });
      const updated = (desc = false) => ({ order: { field: "update_time" as const, desc } });
      const byUid = (desc = false) => ({ order: { field: "uid" as const, desc } });
      const all: Label[] = ["R1", "E", "A1", "W", "O", "A2", "R2", "E2"];

      // [what, query, expected items, total (default: their count), hasMore (default: false)]
      const cases: [string, Partial<ListQuery>, Label[], number?, boolean?][] = [
        ["everything, by create time then uid", {}, all],
        [
          "descendantsOf a root: any depth, not itself",
          { descendantsOf: R1 },
          ["E", "A1", "W", "O", "A2"],
        ],
        ["descendantsOf an inner group", { descendantsOf: uids.E }, ["A1", "W"]],
        ["descendantsOf a leaf", { descendantsOf: uids.A1 }, []],
        ["descendantsOf a missing group", { descendantsOf: missing }, []],
        ["childrenOf a root: one level", { childrenOf: R1 }, ["E", "O"]],
        ["childrenOf an inner group", { childrenOf: uids.E }, ["A1", "W"]],
        ["name in two places", { name: "api" }, ["A1", "A2"]],
        ["name shared by two organizations", { name: "acme" }, ["R1", "R2"]],
        ["name that nothing has", { name: "nope" }, []],
        ["name and descendantsOf", { name: "api", descendantsOf: uids.O }, ["A2"]],
        ["childrenOf and descendantsOf", { childrenOf: R1, descendantsOf: R1 }, ["E", "O"]],
        ["name ascending, ties by uid", name(), ["R1", "R2", "A2", "A1", "E", "E2", "O", "W"]],
        [
          "name descending, ties by uid desc",
          name(true),
          ["W", "O", "E2", "E", "A1", "A2", "R2", "R1"],
        ],
        ["create time descending", created(true), ["E2", "R2", "A2", "O", "W", "A1", "E", "R1"]],
        ["update time ascending", updated(), ["R1", "E", "A1", "W", "A2", "R2", "E2", "O"]],
        ["update time descending", updated(true), ["O", "E2", "R2", "A2", "W", "A1", "E", "R1"]],
        ["uid ascending", byUid(), ["R1", "O", "A2", "E", "A1", "W", "R2", "E2"]],
        ["uid descending", byUid(true), ["E2", "R2", "W", "A1", "E", "A2", "O", "R1"]],
        ["scope of one subtree", { scope: [uids.E] }, ["E", "A1", "W"]],
        ["scope of two subtrees", { scope: [uids.E, uids.O] }, ["E", "A1", "W", "O", "A2"]],
        [
          "overlapping scopes, no duplicates",
          { scope: [uids.E, R1] },
          ["R1", "E", "A1", "W", "O", "A2"],
        ],
        ["empty scope: nothing", { scope: [] }, []],
        ["scope of a missing group", { scope: [missing] }, []],
        ["scope and filters of another organization", { scope: [R2], descendantsOf: R1 }, []],
        ["skip and limit", { skip: 2, limit: 3 }, ["A1", "W", "O"], 8, true],
        ["limit exactly everything", { limit: 8 }, all, 8, false],
        ["limit one short", { limit: 7 }, all.slice(0, 7), 8, true],
        ["skip past the end", { skip: 10 }, [], 8, false],
        [
          "after a create-time cursor with a tie",
          { after: { value: 3, uid: uids.A1 } },
          ["W", "O", "A2", "R2", "E2"],
          8,
        ],
        [
          "after a cursor, descending",
          { ...created(true), after: { value: 3, uid: uids.A1 } },
          ["E", "R1"],
          8,
        ],
        [
          "after a name cursor",
          { ...name(), after: { value: "api", uid: uids.A2 } },
          ["A1", "E", "E2", "O", "W"],
          8,
        ],
        [
          "skip applies from the cursor",
          { ...name(), after: { value: "api", uid: uids.A2 }, skip: 1, limit: 2 },
          ["E", "E2"],
          8,
          true,
        ],
        [
          "after a uid cursor",
          { ...byUid(), after: { value: uids.E, uid: uids.E } },
          ["A1", "W", "R2", "E2"],
          8,
        ],
        [
          "cursor, filters and scope together",
          { descendantsOf: R1, scope: [uids.E], after: { value: 2, uid: uids.E } },
          ["A1", "W"],
          3,
        ],
      ];

      it.each(cases)("%s", async (_what, q, expected, total, hasMore = false) => {
        const page = await store.listGroups(listQuery(q));
        expect(page.items.map((g) => labelOf.get(g.uid))).toEqual(expected);
        expect(page.total).toBe(total ?? expected.length);
        expect(page.hasMore).toBe(hasMore);
      });

      it("returns whole records", async () => {
        const page = await store.listGroups(listQuery({ childrenOf: R1 }));
        expect(page.items[1]).toEqual(await store.getGroup(uids.O));
        expect(page.items[1]).toMatchObject({ updateTime: 10, createTime: 4, parentUid: R1 });
      });
    });

    describe("identities, roles and role bindings", () => {
      const viewer = builtinRoles.find((r) => r.name === "viewer")!;
      const cm: ClaimMatchRecord = {
        issuer: "https://issuer.test",
        issuerPattern: "",
        subject: "",
        subjectPattern: "repo:acme/.*",
        audience: "",
        audiencePattern: "",
        claims: { ref: "main" },
        claimPatterns: {},
      };
      const sk: StaticKeysRecord = {
        issuer: "https://static.test",
        subject: "ci",
        issuerKeys: '{"keys":[]}',
        expirationTime: 5000,
      };
      const id = (group: string, n: string) => `${group}/${n.repeat(16)}`;
      const I1 = id(uids.E, "1");
      const I2 = id(uids.O, "2");
      const IB = id(R2, "3");
      const P = "9".repeat(40);

      beforeEach(async () => {
        for (const g of tree) await create(uids[g.label], g.parent && uids[g.parent], g.name, g.t);
      });
      const identity = (uid: string, group: string, name: string, now = 10) =>
        store.createIdentity({ uid, groupUid: group, name, description: "", claimMatch: cm, now });
      const bind = (uid: string, group: string, identityUid: string, roleUid: string, now = 20) =>
        store.createRoleBinding({ uid, groupUid: group, identityUid, roleUid, now });

      it("creates, reads, updates and touches an identity", async () => {
        const created = await identity(I1, uids.E, "ci", 10);
        expect(created).toEqual({
          uid: I1,
          groupUid: uids.E,
          name: "ci",
          description: "",
          email: "",
          lastSeenTime: 10,
          claimMatch: cm,
          createTime: 10,
          updateTime: 10,
        });
        expect(await store.getIdentity(I1)).toEqual(created);
        expect(await store.getIdentity(id(uids.E, "f"))).toBeUndefined();
        // Setting the other method clears the first.
        const switched = await store.updateIdentity(I1, { staticKeys: sk, name: "ci2" }, 11);
        expect(switched).toMatchObject({ name: "ci2", staticKeys: sk, updateTime: 11 });
        expect(switched.claimMatch).toBeUndefined();
        const described = await store.updateIdentity(I1, { description: "d" }, 12);
        expect(described).toMatchObject({ name: "ci2", description: "d", staticKeys: sk });
        await store.touchIdentity(I1, 50);
        expect(await store.getIdentity(I1)).toMatchObject({ lastSeenTime: 50, updateTime: 12 });
        await storeError(() => store.touchIdentity(missing, 1), "not_found");
        await storeError(() => store.updateIdentity(missing, {}, 1), "not_found");
        await storeError(() => store.deleteIdentity(missing), "not_found");
      });

      it("refuses an identity in a missing group, a taken uid, a uid outside its group", async () => {
        await storeError(() => identity(id(missing, "1"), missing, "x"), "not_found");
        await identity(I1, uids.E, "ci");
        await storeError(() => identity(I1, uids.E, "again"), "already_exists");
        await expect(identity(id(uids.O, "1"), uids.E, "x")).rejects.toThrow();
      });

      it("creates a person once and refreshes it on later logins", async () => {
        const login = { uid: P, issuer: "https://users.test", subject: "u1", name: "Ann" };
        const first = await store.upsertPerson({ ...login, email: "a@x.test", now: 5 });
        expect(first).toEqual({
          uid: P,
          groupUid: "",
          name: "Ann",
          description: "",
          email: "a@x.test",
          lastSeenTime: 5,
          createTime: 5,
          updateTime: 5,
          // How the person signs in (the people view matches it to providers).
          signIn: { issuer: "https://users.test", subject: "u1" },
        });
        const again = await store.upsertPerson({ ...login, name: "Ann B", email: "", now: 9 });
        expect(again).toMatchObject({ name: "Ann B", email: "", lastSeenTime: 9, createTime: 5 });
        // A person lives in no group, so no scope or tree filter finds it.
        await identity(I1, uids.E, "ci");
        const all = await store.listIdentities(listQuery({ scope: [R1, R2] }));
        expect(all.items.map((i) => i.uid)).toEqual([I1]);
        expect((await store.listIdentities(listQuery())).total).toBe(2);
      });

      it("lists identities by tree filters and scope", async () => {
        await identity(I1, uids.E, "ci", 10);
        await identity(I2, uids.O, "deploy", 11);
        await identity(IB, R2, "other", 12);
        const names = async (q: Partial<ListQuery>) =>
          (await store.listIdentities(listQuery(q))).items.map((i) => i.name);
        expect(await names({ descendantsOf: R1 })).toEqual(["ci", "deploy"]);
        expect(await names({ childrenOf: uids.O })).toEqual(["deploy"]);
        expect(await names({ scope: [uids.E] })).toEqual(["ci"]);
        expect(await names({ scope: [R2] })).toEqual(["other"]);
        expect(await names({ scope: [] })).toEqual([]);
        expect(await names({ name: "deploy", scope: [R1] })).toEqual(["deploy"]);
      });

      it("holds the built-in roles with their capabilities, immutable", async () => {
        for (const b of builtinRoles) {
          expect(await store.getRole(b.uid)).toMatchObject({
            uid: b.uid,
            groupUid: "",
            name: b.name,
            builtin: true,
            capabilities: [...b.capabilities].sort(),
          });
        }
        await storeError(
          () => store.updateRole(ownerRole.uid, { name: "x" }, 1),
          "failed_precondition",
        );
        await storeError(() => store.deleteRole(ownerRole.uid), "failed_precondition");
      });

      it("creates, updates and deletes a custom role, refusing while bound", async () => {
        const uid = id(uids.E, "a");
        const role = await store.createRole({
          uid,
          groupUid: uids.E,
          name: "pusher",
          description: "",
          capabilities: ["repo.list", "groups.list", "repo.list"],
          now: 10,
        });
        expect(role).toEqual({
          uid,
          groupUid: uids.E,
          name: "pusher",
          description: "",
          capabilities: ["groups.list", "repo.list"],
          builtin: false,
          createTime: 10,
          updateTime: 10,
        });
        const changed = await store.updateRole(uid, { capabilities: ["tag.list"] }, 11);
        expect(changed).toMatchObject({
          name: "pusher",
          capabilities: ["tag.list"],
          updateTime: 11,
        });
        await identity(I1, uids.E, "ci");
        await bind(id(uids.A1, "b"), uids.A1, I1, uid);
        await storeError(() => store.deleteRole(uid), "failed_precondition");
        await store.deleteRoleBinding(id(uids.A1, "b"));
        await store.deleteRole(uid);
        expect(await store.getRole(uid)).toBeUndefined();
        await storeError(() => store.deleteRole(uid), "not_found");
        await storeError(
          () =>
            store.createRole({
              uid: id(missing, "a"),
              groupUid: missing,
              name: "x",
              description: "",
              capabilities: ["groups.list"],
              now: 1,
            }),
          "not_found",
        );
      });

      it("lists roles visible from a scope: built-ins, and custom roles above or below it", async () => {
        let t = 10;
        const role = (group: string, n: string, name: string) =>
          store.createRole({
            uid: id(group, n),
            groupUid: group,
            name,
            description: "",
            capabilities: ["groups.list"],
            now: t++,
          });
        await role(R1, "a", "at-root");
        await role(uids.E, "b", "at-eng");
        await role(uids.A1, "c", "below-eng");
        await role(uids.O, "d", "beside");
        await role(R2, "e", "other-org");
        const custom = async (q: Partial<ListQuery>) => {
          const page = await store.listRoles(listQuery({ ...q, limit: 100 }));
          return page.items.filter((r) => !r.builtin).map((r) => r.name);
        };
        expect(await custom({ scope: [uids.E] })).toEqual(["at-root", "at-eng", "below-eng"]);
        expect(await custom({ scope: [R2] })).toEqual(["other-org"]);
        expect(await custom({ descendantsOf: uids.E })).toEqual(["at-eng", "below-eng"]);
        expect(await custom({ childrenOf: R1 })).toEqual(["at-root"]);
        const scoped = await store.listRoles(listQuery({ scope: [uids.E], limit: 100 }));
        expect(scoped.total).toBe(builtinRoles.length + 3);
        expect((await store.listRoles(listQuery({ scope: [] }))).total).toBe(0);
        const byName = await store.listRoles(listQuery({ name: "owner", scope: [uids.W] }));
        expect(byName.items.map((r) => r.uid)).toEqual([ownerRole.uid]);
      });

      it("binds, hydrates, refuses duplicates and missing parts, and rebinds", async () => {
        await identity(I1, uids.E, "ci");
        const b = id(uids.E, "b");
        const created = await bind(b, uids.E, I1, viewer.uid, 20);
        expect(created).toEqual({
          uid: b,
          groupUid: uids.E,
          identityUid: I1,
          teamUid: "",
          roleUid: viewer.uid,
          createTime: 20,
          updateTime: 20,
          identity: {
            uid: I1,
            name: "ci",
            description: "",
            subject: "repo:acme/.*",
            issuer: "https://issuer.test",
          },
          group: { uid: uids.E, name: "eng", description: "" },
          role: { uid: viewer.uid, name: "viewer", description: viewer.description },
        });
        expect(await store.getRoleBinding(b)).toEqual(created);
        await storeError(() => bind(id(uids.E, "c"), uids.E, I1, viewer.uid), "already_exists");
        await storeError(() => bind(id(uids.E, "c"), uids.E, missing, viewer.uid), "not_found");
        await storeError(() => bind(id(uids.E, "c"), uids.E, I1, missing), "not_found");
        await storeError(() => bind(id(missing, "c"), missing, I1, viewer.uid), "not_found");
        await bind(id(uids.E, "c"), uids.E, I1, ownerRole.uid);
        await storeError(() => store.updateRoleBinding(b, ownerRole.uid, 30), "already_exists");
        await store.deleteRoleBinding(id(uids.E, "c"));
        const rebound = await store.updateRoleBinding(b, ownerRole.uid, 30);
        expect(rebound).toMatchObject({ roleUid: ownerRole.uid, role: { name: "owner" } });
        await storeError(() => store.updateRoleBinding(b, missing, 31), "not_found");
        await storeError(() => store.updateRoleBinding(missing, viewer.uid, 31), "not_found");
        await storeError(() => store.deleteRoleBinding(missing), "not_found");
      });

      it("lists bindings by identity, group, role, role name and scope", async () => {
        await identity(I1, uids.E, "ci");
        await identity(I2, uids.O, "deploy");
        await bind(id(R1, "a"), R1, I1, viewer.uid, 21);
        await bind(id(uids.E, "b"), uids.E, I1, ownerRole.uid, 22);
        await bind(id(uids.O, "c"), uids.O, I2, viewer.uid, 23);
        const list = async (q: Partial<ListQuery<RoleBindingFilters>>) =>
          (await store.listRoleBindings({ ...listQuery(), filters: {}, ...q })).items.map(
            (b) => b.uid,
          );
        expect(await list({ filters: { identity: I1 } })).toEqual([id(R1, "a"), id(uids.E, "b")]);
        expect(await list({ filters: { group: uids.O } })).toEqual([id(uids.O, "c")]);
        expect(await list({ filters: { role: viewer.uid, identity: I2 } })).toEqual([
          id(uids.O, "c"),
        ]);
        expect(await list({ name: "owner" })).toEqual([id(uids.E, "b")]);
        expect(await list({ scope: [uids.E] })).toEqual([id(uids.E, "b")]);
        expect(await list({ descendantsOf: R1, order: { field: "name", desc: true } })).toEqual([
          id(uids.O, "c"),
          id(R1, "a"),
          id(uids.E, "b"),
        ]);
      });

      it("answers the access queries through the tree, for built-in and custom roles", async () => {
        await identity(I1, uids.E, "ci");
        const custom = id(R1, "r");
        await store.createRole({
          uid: custom,
          groupUid: R1,
          name: "tags",
          description: "",
          capabilities: ["tag.create"],
          now: 1,
        });
        await bind(id(uids.E, "a"), uids.E, I1, viewer.uid);
        await bind(id(uids.O, "b"), uids.O, I1, custom);
        const at = (groups: string[]) => store.capabilitiesAt(I1, groups);
        expect(await at([R1, uids.E, uids.A1])).toEqual(new Set(viewer.capabilities));
        expect(await at([R1])).toEqual(new Set());
        expect(await at([R1, uids.O, uids.A2])).toEqual(new Set(["tag.create"]));
        expect(await at([R2, uids.E2])).toEqual(new Set());
        expect(await store.capabilitiesAt(I2, [R1, uids.E])).toEqual(new Set());
        expect(await store.groupsWithCapability(I1, "groups.list")).toEqual([uids.E]);
        expect(await store.groupsWithCapability(I1, "tag.create")).toEqual([uids.O]);
        expect(await store.groupsWithCapability(I1, "groups.delete")).toEqual([]);
        // A removed binding takes effect at once.
        await store.deleteRoleBinding(id(uids.E, "a"));
        expect(await at([R1, uids.E])).toEqual(new Set());
        expect(await store.groupsWithCapability(I1, "groups.list")).toEqual([]);
        // So does a change to a bound role's capabilities, asked the same question again.
        expect(await at([R1, uids.O])).toEqual(new Set(["tag.create"]));
        await store.updateRole(custom, { capabilities: ["tag.delete"] }, 2);
        expect(await at([R1, uids.O])).toEqual(new Set(["tag.delete"]));
        expect(await store.groupsWithCapability(I1, "tag.create")).toEqual([]);
      });

      it("says whether an identity exists, at once after it is created or deleted", async () => {
        expect(await store.identityExists(I1)).toBe(false);
        await identity(I1, uids.E, "ci");
        expect(await store.identityExists(I1)).toBe(true);
        expect(await store.identityExists(I2)).toBe(false);
        await store.deleteIdentity(I1);
        expect(await store.identityExists(I1)).toBe(false);
      });

      it("removes the bindings of a deleted identity and of a deleted group", async () => {
        await identity(I1, uids.E, "ci");
        await identity(I2, uids.O, "deploy");
        await bind(id(uids.A1, "a"), uids.A1, I1, viewer.uid);
        await bind(id(uids.W, "b"), uids.W, I2, viewer.uid);
        await bind(id(uids.E, "c"), uids.E, I2, viewer.uid);
        await store.deleteIdentity(I1);
        expect(await store.getIdentity(I1)).toBeUndefined();
        expect(await store.getRoleBinding(id(uids.A1, "a"))).toBeUndefined();
        await store.deleteGroup(uids.W);
        expect(await store.getRoleBinding(id(uids.W, "b"))).toBeUndefined();
        expect(await store.getRoleBinding(id(uids.E, "c"))).toBeDefined();
      });

      it("refuses to delete a group with identities or roles", async () => {
        await identity(id(uids.W, "1"), uids.W, "ci");
        const withIdentity = await storeError(() => store.deleteGroup(uids.W), "not_empty");
        expect(withIdentity.childKind).toBe("identities");
        await store.createRole({
          uid: id(uids.A1, "r"),
          groupUid: uids.A1,
          name: "r",
          description: "",
          capabilities: ["groups.list"],
          now: 1,
        });
        const withRole = await storeError(() => store.deleteGroup(uids.A1), "not_empty");
        expect(withRole.childKind).toBe("roles");
      });

      it("creates an organization with its owner in one step, or nothing", async () => {
        await store.upsertPerson({
          uid: P,
          issuer: "i",
          subject: "s",
          name: "Ann",
          email: "",
          now: 1,
        });
        const org = "3".repeat(40);
        const group = { uid: org, name: "new", description: "d", now: 40 };
        const created = await store.createOrganization(group, {
          bindingUid: id(org, "b"),
          identityUid: P,
          roleUid: ownerRole.uid,
        });
        expect(created).toMatchObject({ uid: org, parentUid: "", name: "new", createTime: 40 });
        expect(await store.capabilitiesAt(P, [org])).toEqual(new Set(ownerRole.capabilities));
        const other = "4".repeat(40);
        await storeError(
          () =>
            store.createOrganization(
              { ...group, uid: other },
              { bindingUid: id(other, "b"), identityUid: missing, roleUid: ownerRole.uid },
            ),
          "not_found",
        );
        expect(await store.getGroup(other)).toBeUndefined();
      });

      it("keeps at least one owner binding at every organization's root", async () => {
        await identity(I1, uids.E, "ci");
        await identity(I2, uids.O, "deploy");
        const first = id(R1, "a");
        await bind(first, R1, I1, ownerRole.uid);
        // The only owner binding of R1: not deleted, not demoted, its identity not deleted.
        await storeError(() => store.deleteRoleBinding(first), "failed_precondition");
        await storeError(
          () => store.updateRoleBinding(first, viewer.uid, 30),
          "failed_precondition",
        );
        await storeError(() => store.deleteIdentity(I1), "failed_precondition");
        expect(await store.getRoleBinding(first)).toMatchObject({ roleUid: ownerRole.uid });
        expect(await store.getIdentity(I1)).toBeDefined();
        // Re-saving it as owner changes nothing and is fine.
        await store.updateRoleBinding(first, ownerRole.uid, 31);
        // With a second owner, either may go.
        const second = id(R1, "b");
        await bind(second, R1, I2, ownerRole.uid);
        await store.deleteRoleBinding(first);
        await storeError(() => store.deleteIdentity(I2), "failed_precondition");
        // Owner bindings below the root are not the organization's last line.
        const below = id(uids.E, "c");
        await bind(below, uids.E, I1, ownerRole.uid);
        await store.deleteRoleBinding(below);
        await store.deleteIdentity(I1);
      });
    });

    describe("signing keys", () => {
      const key = (kid: string, createTime: number) => ({
        kid,
        privateJwk: `{"kid":"${kid}","d":"secret"}`,
        publicJwk: `{"kid":"${kid}"}`,
        createTime,
      });

      it("adds and lists keys oldest first, refusing a taken kid", async () => {
        expect(await store.listSigningKeys()).toEqual([]);
        await store.addSigningKey(key("b", 200));
        await store.addSigningKey(key("a", 100));
        await store.addSigningKey(key("c", 200));
        expect(await store.listSigningKeys()).toEqual([
          key("a", 100),
          key("b", 200),
          key("c", 200),
        ]);
        await storeError(() => store.addSigningKey(key("a", 300)), "already_exists");
      });

      it("prunes keys older than a time but always keeps the newest", async () => {
        for (const [kid, t] of [
          ["a", 100],
          ["b", 200],
          ["c", 300],
        ] as const) {
          await store.addSigningKey(key(kid, t));
        }
        await store.pruneSigningKeys(250);
        expect((await store.listSigningKeys()).map((k) => k.kid)).toEqual(["c"]);
        await store.pruneSigningKeys(1000);
        expect((await store.listSigningKeys()).map((k) => k.kid)).toEqual(["c"]);
      });

      it("sets a key's time, so a pending key starts signing", async () => {
        await store.addSigningKey(key("a", 100));
        await store.addSigningKey(key("b", 9_000));
        await store.setSigningKeyTime("b", 50);
        expect((await store.listSigningKeys()).map((k) => [k.kid, k.createTime])).toEqual([
          ["b", 50],
          ["a", 100],
        ]);
        await storeError(() => store.setSigningKeyTime("zz", 1), "not_found");
      });
    });

    describe("secrets", () => {
      it("creates a secret once and returns it ever after", async () => {
        const first = await store.getOrCreateSecret("page-token-key", () => randomBytes(32));
        expect(first).toHaveLength(32);
        let calls = 0;
        const again = await store.getOrCreateSecret("page-token-key", () => {
          calls++;
          return randomBytes(32);
        });
        expect(calls).toBe(0);
        expect(again.equals(first)).toBe(true);
        const other = await store.getOrCreateSecret("other", () => randomBytes(32));
        expect(other.equals(first)).toBe(false);
      });

      it("gives concurrent callers the same value", async () => {
        const values = await Promise.all(
          Array.from({ length: 10 }, () => store.getOrCreateSecret("k", () => randomBytes(32))),
        );
        for (const v of values) expect(v.equals(values[0]!)).toBe(true);
      });
    });

    describe("registry and advisories", () => registryCases(() => store));
    describe("registry namespaces", () => registryNamespaceCases(() => store));

    describe("identity providers and account associations", () => orgAdminCases(() => store));
    describe("group invites", () => inviteCases(() => store));
    describe("access requests", () => accessRequestCases(() => store));
    describe("sign-in upkeep", () => signInUpkeepCases(() => store));
    describe("people", () => peopleCases(() => store));
    describe("webhook subscriptions", () => subscriptionCases(() => store));
    describe("teams", () => teamCases(() => store));
    describe("SCIM provisioning", () => scimCases(() => store));

    describe("audit trail", () => {
      it("lists the event of a write made in a mutating call's scope, and of no other", async () => {
        const scope: AuditScope = {
          type: "dev.gatehouse.iam.group.created.v1",
          source: "/gatehouse.iam.v2beta1.GroupsService",
          actorUid: "",
          requestId: "req-1",
          protocol: "connect",
          requestUid: "",
          recorded: false,
        };
        const call = store.recording(scope);
        await call.createGroup({ uid: R1, parentUid: "", name: "acme", description: "", now: 100 });
        // Through the store itself (bootstrap's start-up, the deliverer): nothing is recorded.
        await create(R2, "", "quiet", 100);
        const page = await store.listEvents(listQuery() as Parameters<Store["listEvents"]>[0]);
        expect(page.total).toBe(1);
        expect(page.items[0]).toMatchObject({
          type: scope.type,
          source: scope.source,
          subject: R1,
        });
        // An event is a child of its subject in the uid tree.
        const about = await store.listEvents({
          ...(listQuery({ childrenOf: R1 }) as Parameters<Store["listEvents"]>[0]),
        });
        expect(about.items.map((e) => e.uid)).toEqual([page.items[0]?.uid]);
        expect(page.items[0]?.uid.startsWith(`${R1}/`)).toBe(true);
        // A call records one event, with its first change: a second write through its view,
        // inside a transaction or not, adds none.
        await call.atomically((tx) =>
          tx.updateGroup(R1, { description: "again" }, 101).then(() => undefined),
        );
        expect(
          (await store.listEvents(listQuery() as Parameters<Store["listEvents"]>[0])).total,
        ).toBe(1);
      });

      it("records a call's change made in a transaction of its view, and forgets a rolled-back one", async () => {
        const scope: AuditScope = {
          type: "dev.gatehouse.iam.group.created.v1",
          source: "/gatehouse.iam.v2beta1.GroupsService",
          actorUid: "someone",
          requestId: "req-2",
          protocol: "grpc",
          requestUid: "",
          recorded: false,
        };
        const call = store.recording(scope);
        await expect(
          call.atomically(async (tx) => {
            await tx.createGroup({ uid: R1, parentUid: "", name: "a", description: "", now: 1 });
            throw new Error("changed my mind");
          }),
        ).rejects.toThrow("changed my mind");
        expect(scope.recorded).toBe(false);
        await call.atomically((tx) =>
          tx.createGroup({ uid: R1, parentUid: "", name: "a", description: "", now: 2 }),
        );
        const page = await store.listEvents(listQuery() as Parameters<Store["listEvents"]>[0]);
        expect(page.items.map((e) => [e.subject, e.actorUid])).toEqual([[R1, "someone"]]);
      });

      it("writes a person actor's issuer and subject into the event's data, and no one else's", async () => {
        // Characters JSON must escape: the data is written as one text (on PostgreSQL by the
        // statement that appends the event).
        const person = await store.upsertPerson({
          uid: "p".repeat(40),
          issuer: 'https://idp.test/"quoted"\\back',
          subject: "ünïcode\nline",
          name: "Pat",
          email: "",
          now: 1,
        });
        const scope = (actorUid: string): AuditScope => ({
          type: "dev.gatehouse.iam.group.created.v1",
          source: "/gatehouse.iam.v2beta1.GroupsService",
          actorUid,
          requestId: "req-3",
          protocol: "grpc",
          requestUid: "",
          recorded: false,
        });
        await store
          .recording(scope(person.uid))
          .createGroup({ uid: R1, parentUid: "", name: "a", description: "", now: 1 });
        await store
          .recording(scope("nobody-known"))
          .createGroup({ uid: R2, parentUid: "", name: "b", description: "", now: 2 });
        const page = await store.listEvents(listQuery() as Parameters<Store["listEvents"]>[0]);
        const actorOf = (subject: string) =>
          (JSON.parse(page.items.find((e) => e.subject === subject)!.data) as { actor: unknown })
            .actor;
        expect(actorOf(R1)).toEqual({
          uid: person.uid,
          issuer: 'https://idp.test/"quoted"\\back',
          subject: "ünïcode\nline",
        });
        expect(actorOf(R2)).toEqual({ uid: "nobody-known" });
      });
    });

    describe("atomically", () => {
      const C1 = uids.E;
      const viewerRole = builtinRoles.find((r) => r.name === "viewer")!;
      const pause = () => new Promise((r) => setTimeout(r, 30));

      it("commits every write of the callback together", async () => {
        const made = await store.atomically(async (tx) => {
          await tx.createGroup({ uid: R1, parentUid: "", name: "one", description: "", now: 1 });
          await pause();
          await tx.createGroup({ uid: C1, parentUid: R1, name: "c", description: "", now: 1 });
          return tx.getGroupPath(C1);
        });
        expect(made).toEqual([R1, C1]);
        expect(await store.getGroupPath(C1)).toEqual([R1, C1]);
      });

      it("rolls back every write of a callback that throws, and nothing else", async () => {
        const failing = store.atomically(async (tx) => {
          await tx.createGroup({ uid: R1, parentUid: "", name: "one", description: "", now: 1 });
          await pause();
          throw new Error("changed my mind");
        });
        // Issued while the callback's transaction is open: it must not join it.
        const other = store.createGroup({
          uid: R2,
          parentUid: "",
          name: "two",
          description: "",
          now: 1,
        });
        await expect(failing).rejects.toThrow("changed my mind");
        await other;
        expect(await store.getGroup(R1)).toBeUndefined();
        expect(await store.getGroup(R2)).toBeDefined();
      });

      it("reads its own writes, access questions included, and passes StoreErrors through", async () => {
        await create(R1, "", "org");
        const identityUid = `${R1}/${"a".repeat(16)}`;
        const err = await store
          .atomically(async (tx) => {
            await tx.createIdentity({
              uid: identityUid,
              groupUid: R1,
              name: "w",
              description: "",
              staticKeys: { issuer: "i", subject: "s", issuerKeys: "{}", expirationTime: 9 },
              now: 1,
            });
            expect(await tx.identityExists(identityUid)).toBe(true);
            await tx.createRoleBinding({
              uid: `${R1}/${"b".repeat(16)}`,
              groupUid: R1,
              identityUid,
              roleUid: viewerRole.uid,
              now: 1,
            });
            expect([...(await tx.capabilitiesAt(identityUid, [R1]))]).toContain("groups.list");
            await tx.getGroup(R1);
            return tx.createGroup({ uid: R1, parentUid: "", name: "dup", description: "", now: 1 });
          })
          .catch((e: unknown) => e);
        expect(err).toMatchObject({ kind: "already_exists" });
        // All of it rolled back, and the cached access answers do not remember it.
        expect(await store.identityExists(identityUid)).toBe(false);
        expect((await store.capabilitiesAt(identityUid, [R1])).size).toBe(0);
      });
    });

    describe("lifecycle", () => {
      it("answers ping while open", async () => {
        await store.ping();
      });
    });
  });
}
