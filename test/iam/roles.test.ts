import { beforeAll, describe, expect, it } from "vitest";
import { builtinRoles, ownerRole } from "../../src/auth/capabilities.js";
import { failure } from "../helpers/connect-errors.js";
import type { IamClients } from "../helpers/iam-clients.js";
import { iamOf, useInMemory } from "../helpers/in-memory.js";
import type { TestOrg } from "../helpers/test-orgs.js";

let org: TestOrg;

const ts = useInMemory();
beforeAll(async () => {
  org = await ts.makeOrg("roles");
});

describe.each(["memory"])("roles in %s", (protocol) => {
  let c: IamClients;
  let group: string;
  beforeAll(async () => {
    c = iamOf(ts.clients(org.owner.headers));
    group = (await c.groups.createGroup({ parent: org.uid, group: { name: `r-${protocol}` } })).uid;
  });

  it("lists and reads the built-in roles, and refuses to change them", async () => {
    const all = await c.roles.listRoles({ pageSize: 200 });
    const names = all.roles.map((r) => r.name);
    for (const b of builtinRoles) expect(names).toContain(b.name);
    const owner = await c.roles.getRole({ uid: ownerRole.uid });
    expect(owner).toMatchObject({
      name: "owner",
      capabilities: [...ownerRole.capabilities].sort(),
    });
    const update = await failure(c.roles.updateRole({ role: { uid: ownerRole.uid, name: "x" } }));
    expect(update).toMatchObject({ code: 9, reason: "FAILED_PRECONDITION" });
    const del = await failure(c.roles.deleteRole({ uid: ownerRole.uid }));
    expect(del).toMatchObject({ code: 9, reason: "FAILED_PRECONDITION" });
  });

  it("creates, reads, lists with paging, updates and deletes a custom role", async () => {
    const created = await c.roles.createRole({
      parent: group,
      role: { name: "reader", description: "reads", capabilities: ["repo.list", "groups.list"] },
    });
    expect(created.uid).toMatch(new RegExp(`^${group}/[0-9a-f]{16}$`));
    expect(created).toMatchObject({ name: "reader", capabilities: ["groups.list", "repo.list"] });
    expect(await c.roles.getRole({ uid: created.uid })).toEqual(created);
    for (const name of ["a-role", "z-role"]) {
      await c.roles.createRole({ parent: group, role: { name, capabilities: ["tag.list"] } });
    }
    const q = { uidp: { childrenOf: group, descendantsOf: "" }, pageSize: 2, orderBy: "name" };
    const first = await c.roles.listRoles(q);
    expect(first.roles.map((r) => r.name)).toEqual(["a-role", "reader"]);
    expect(first.totalCount).toBe(3n);
    const second = await c.roles.listRoles({ ...q, pageToken: first.nextPageToken ?? "" });
    expect(second.roles.map((r) => r.name)).toEqual(["z-role"]);

    const described = await c.roles.updateRole({ role: { uid: created.uid, description: "more" } });
    expect(described).toMatchObject({ name: "reader", description: "more" });
    expect(described.capabilities).toEqual(["groups.list", "repo.list"]);
    const masked = await c.roles.updateRole({
      role: { uid: created.uid, name: "ignored", capabilities: ["tag.list"] },
      updateMask: { paths: ["capabilities"] },
    });
    expect(masked).toMatchObject({ name: "reader", capabilities: ["tag.list"] });
    await c.roles.deleteRole({ uid: created.uid });
    expect(await failure(c.roles.getRole({ uid: created.uid }))).toMatchObject({ code: 5 });
  });

  it("refuses to delete a bound role", async () => {
    const role = await c.roles.createRole({
      parent: group,
      role: { name: "bound", capabilities: ["groups.list"] },
    });
    const someone = await ts.makeIdentity(group);
    const binding = await c.roleBindings.createRoleBinding({
      parent: group,
      roleBinding: { identityUid: someone.uid, roleUid: role.uid },
    });
    expect(await failure(c.roles.deleteRole({ uid: role.uid }))).toMatchObject({ code: 9 });
    await c.roleBindings.deleteRoleBinding({ uid: binding.uid });
    await c.roles.deleteRole({ uid: role.uid });
  });

  // [case, role body, fields]
  const invalid: [string, { name: string; capabilities: string[] }, string[]][] = [
    ["no capabilities", { name: "n", capabilities: [] }, ["capabilities"]],
    [
      "an unknown capability",
      { name: "n", capabilities: ["groups.list", "root.all"] },
      ["capabilities"],
    ],
    ["no name", { name: "", capabilities: ["groups.list"] }, ["name"]],
    ["no name and no capabilities", { name: "", capabilities: [] }, ["name", "capabilities"]],
  ];
  it.each(invalid)("rejects %s", async (_case, role, fields) => {
    const err = await failure(c.roles.createRole({ parent: group, role }));
    expect(err).toMatchObject({ code: 3, reason: "INVALID_ARGUMENT", fields });
  });

  it("shows a custom role in its group's subtree, not beside it", async () => {
    const defined = await c.roles.createRole({
      parent: group,
      role: { name: "scoped", capabilities: ["groups.list"] },
    });
    const below = (await c.groups.createGroup({ parent: group, group: { name: "below" } })).uid;
    const beside = (
      await c.groups.createGroup({ parent: org.uid, group: { name: `b-${protocol}` } })
    ).uid;
    const inside = iamOf(ts.clients((await ts.makeIdentity(below, ["viewer"])).headers));
    const outside = iamOf(ts.clients((await ts.makeIdentity(beside, ["viewer"])).headers));
    expect(await inside.roles.getRole({ uid: defined.uid })).toMatchObject({ name: "scoped" });
    const insideList = await inside.roles.listRoles({ name: "scoped" });
    expect(insideList.roles.map((r) => r.uid)).toEqual([defined.uid]);
    expect(await failure(outside.roles.getRole({ uid: defined.uid }))).toMatchObject({ code: 7 });
    const outsideList = await outside.roles.listRoles({ name: "scoped" });
    expect(outsideList.totalCount).toBe(0n);
  });
});
