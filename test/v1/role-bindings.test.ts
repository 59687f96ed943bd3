import { createClient } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { RoleBindingsService } from "../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { newChildUid } from "../../src/uid.js";
import { transportFor } from "../helpers/iam-clients.js";
import type { Json } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";
import {
  idsOf,
  okJson as ok,
  uidpIds,
  type V1Client,
  v1Client,
  v1Protocols,
  v1Resources,
} from "../helpers/v1-clients.js";

const { rolebindings } = v1Resources;
const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const editor = builtinRoles.find((r) => r.name === "editor")!;
let org: TestOrg;
let team: string;

const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("v1-bindings");
  team = newChildUid(org.uid);
  await ts.store.createGroup({
    uid: team,
    parentUid: org.uid,
    name: "team",
    description: "t",
    now: 1,
  });
});

const v2 = () =>
  createClient(RoleBindingsService, transportFor("connect", ts.url, org.owner.headers));

describe.each(v1Protocols)("v1 RoleBindings over %s", (protocol) => {
  let c: V1Client;
  beforeAll(() => {
    c = v1Client(protocol, ts.url, org.owner.headers);
  });

  it("creates from ids, lists hydrated, replaces the role and deletes", async () => {
    const who = await ts.makeIdentity(team);
    const made = ok(await c.create(rolebindings, team, { identity: who.uid, role: viewer.uid }));
    expect(made).toEqual({ id: made.id, identity: who.uid, group: team, role: viewer.uid });
    const id = made.id as string;
    const through2 = await v2().getRoleBinding({ uid: id });
    expect(through2.identity?.uid).toBe(who.uid);
    expect(through2.role?.uid).toBe(viewer.uid);
    expect(through2.group?.uid).toBe(team);

    // The read shape: the whole group and role, the identity's id and its claim match.
    const [item] = ok(await c.list(rolebindings, [["id", id]])).items;
    expect(item).toMatchObject({
      id,
      identity: who.uid,
      group: { id: team, name: "team", description: "t", verified: false },
      role: { id: viewer.uid, name: "viewer", capabilities: [...viewer.capabilities].sort() },
      claimMatchIssuer: through2.identity?.issuer,
      claimMatchSubject: through2.identity?.subject,
    });
    expect(new Date(item.createdAt).getTime()).toBe(
      Number(through2.createTime!.seconds) * 1000 + through2.createTime!.nanos / 1e6,
    );

    expect(await uidpIds(c, rolebindings, "children_of", team)).toContain(id);
    expect(await uidpIds(c, rolebindings, "descendants_of", org.uid)).toContain(id);
    expect(await uidpIds(c, rolebindings, "ancestors_of", `${id}/x`)).toEqual([id]);
    expect(await uidpIds(c, rolebindings, "in_root", "true")).toEqual([]);
    expect(idsOf(ok(await c.list(rolebindings, [["uidp.ids", id]])))).toEqual([id]);
    expect(ok(await c.list(rolebindings, [["id", `${team}/ffffffffffffffff`]]))).toEqual({
      items: [],
    });

    const put = ok(await c.update(rolebindings, id, { identity: who.uid, role: editor.uid }));
    expect(put).toEqual({ id, identity: who.uid, group: team, role: editor.uid });
    expect((await v2().getRoleBinding({ uid: id })).role?.uid).toBe(editor.uid);

    expect(ok(await c.delete(rolebindings, id))).toEqual({});
    expect(ok(await c.list(rolebindings, [["id", id]]))).toEqual({ items: [] });
  });

  it("creates a batch", async () => {
    const a = await ts.makeIdentity(team);
    const b = await ts.makeIdentity(team);
    const batch = [
      { identity: a.uid, role: viewer.uid },
      { identity: b.uid, role: editor.uid },
    ];
    const r = ok(
      await c.call(
        rolebindings,
        "CreateBatch",
        { parent: team, roleBindings: batch },
        // Over REST the body is the JSON array itself.
        { method: "POST", path: `/iam/v1/rolebindings/batch/${team}`, body: batch },
      ),
    );
    expect(r.roleBindings).toHaveLength(2);
    expect(r.roleBindings.map((x: Json) => [x.identity, x.role, x.group])).toEqual([
      [a.uid, viewer.uid, team],
      [b.uid, editor.uid, team],
    ]);
    for (const x of r.roleBindings) {
      expect((await v2().getRoleBinding({ uid: x.id })).identity?.uid).toBe(x.identity);
    }
  });

  it("makes no binding of a batch when one is refused", async () => {
    const a = await ts.makeIdentity(team);
    const batch = [
      { identity: a.uid, role: viewer.uid },
      { identity: a.uid, role: `${org.uid}/ffffffffffffffff` },
    ];
    const r = await c.call(
      rolebindings,
      "CreateBatch",
      { parent: team, roleBindings: batch },
      { method: "POST", path: `/iam/v1/rolebindings/batch/${team}`, body: batch },
    );
    expect(r).toMatchObject({ ok: false, code: 3 }); // INVALID_ARGUMENT
    const left = await v2().listRoleBindings({ identity: a.uid });
    expect(left.roleBindings).toEqual([]);
  });

  it("refuses an empty batch where a create would be refused, and answers an empty one", async () => {
    const empty = (caller: V1Client, parent: string) =>
      caller.call(
        rolebindings,
        "CreateBatch",
        { parent, roleBindings: [] },
        { method: "POST", path: `/iam/v1/rolebindings/batch/${parent}`, body: [] },
      );
    expect(ok(await empty(c, team))).toEqual({ roleBindings: [] });
    const bad = await empty(c, "not-a-uid");
    expect(bad).toMatchObject({ ok: false, code: 3 }); // INVALID_ARGUMENT
    // A caller with no role at the team may not bind there, with or without bindings.
    const stranger = await ts.makeOrg(`v1-batch-${protocol}`);
    const outsider = v1Client(protocol, ts.url, stranger.owner.headers);
    expect(await empty(outsider, team)).toMatchObject({ ok: false, code: 7 }); // PERMISSION_DENIED
  });

  it("shows a binding written through v2", async () => {
    const who = await ts.makeIdentity(team);
    const b = await v2().createRoleBinding({
      parent: team,
      roleBinding: { identityUid: who.uid, roleUid: viewer.uid },
    });
    const [item] = ok(await c.list(rolebindings, [["id", b.uid]])).items;
    expect(item).toMatchObject({
      id: b.uid,
      identity: who.uid,
      group: { id: team },
      role: { id: viewer.uid },
    });
  });
});

describe("v1 RoleBindings hydration", () => {
  it("shows a role's capabilities only to a caller who may read the role through v2", async () => {
    // A caller with role_bindings.list but not roles.list sees the binding, and of its role
    // only what the v2 binding itself shows.
    const custom = newChildUid(org.uid);
    await ts.store.createRole({
      uid: custom,
      groupUid: org.uid,
      name: "bindings-reader",
      description: "",
      capabilities: ["role_bindings.list"],
      now: 1,
    });
    const reader = await ts.makeIdentity(team, [custom]);
    const c = v1Client("rest", ts.url, reader.headers);
    const items = ok(await c.list(rolebindings, [["uidp.childrenOf", team]])).items as Json[];
    const own = items.find((i) => i.identity === reader.uid);
    expect(own.role).toMatchObject({ id: custom, name: "bindings-reader", capabilities: [] });
  });
});
