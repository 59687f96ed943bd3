import { beforeAll, describe, expect, it } from "vitest";
import { builtinRoles, ownerRole } from "../../src/auth/capabilities.js";
import { newChildUid } from "../../src/uid.js";
import {
  failure,
  type IamClients,
  iamClients,
  protocols,
  transportFor,
} from "../helpers/iam-clients.js";
import { restCall } from "../helpers/rest-client.js";
import { type TestCaller, type TestOrg, useTestServer } from "../helpers/test-server.js";

const viewer = builtinRoles.find((r) => r.name === "viewer")!;
const editor = builtinRoles.find((r) => r.name === "editor")!;

let org: TestOrg;
let other: TestOrg;

const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("bindings");
  other = await ts.makeOrg("elsewhere");
});

describe.each(protocols)("role bindings over %s", (protocol) => {
  let c: IamClients;
  let group: string;
  let alice: TestCaller;
  let bob: TestCaller;
  beforeAll(async () => {
    c = iamClients(transportFor(protocol, ts.url, org.owner.headers));
    group = (await c.groups.createGroup({ parent: org.uid, group: { name: `b-${protocol}` } })).uid;
    alice = await ts.makeIdentity(group);
    bob = await ts.makeIdentity(org.uid);
  });
  const bind = (parent: string, identityUid: string, roleUid: string) =>
    c.roleBindings.createRoleBinding({ parent, roleBinding: { identityUid, roleUid } });

  it("creates hydrated bindings, lists them by filter with paging, rebinds and deletes", async () => {
    const created = await bind(group, alice.uid, viewer.uid);
    expect(created.uid).toMatch(new RegExp(`^${group}/[0-9a-f]{16}$`));
    expect(created.identity).toMatchObject({ uid: alice.uid, issuer: "https://ci.test" });
    expect(created.group).toMatchObject({ uid: group, name: `b-${protocol}` });
    expect(created.role).toMatchObject({ uid: viewer.uid, name: "viewer" });
    expect(created.identityUid).toBe("");
    expect(await c.roleBindings.getRoleBinding({ uid: created.uid })).toEqual(created);

    const dup = await failure(bind(group, alice.uid, viewer.uid));
    expect(dup).toMatchObject({ code: 6, reason: "ALREADY_EXISTS" });

    await bind(group, bob.uid, viewer.uid);
    await bind(org.uid, alice.uid, editor.uid);
    const byIdentity = await c.roleBindings.listRoleBindings({ identity: alice.uid, pageSize: 1 });
    expect(byIdentity.roleBindings).toHaveLength(1);
    expect(byIdentity.totalCount).toBe(2n);
    const rest = await c.roleBindings.listRoleBindings({
      identity: alice.uid,
      pageSize: 1,
      pageToken: byIdentity.nextPageToken ?? "",
    });
    expect(rest.roleBindings).toHaveLength(1);
    expect(rest.nextPageToken).toBeUndefined();
    const atGroup = await c.roleBindings.listRoleBindings({ group });
    expect(atGroup.roleBindings.map((b) => b.identity?.uid).sort()).toEqual(
      [alice.uid, bob.uid].sort(),
    );
    const editors = await c.roleBindings.listRoleBindings({
      role: editor.uid,
      identity: alice.uid,
    });
    expect(editors.roleBindings.map((b) => b.group?.uid)).toEqual([org.uid]);

    // No mask: roleUid is present, so it changes; with a mask naming nothing mutable, nothing.
    const rebound = await c.roleBindings.updateRoleBinding({
      roleBinding: { uid: created.uid, roleUid: editor.uid },
    });
    expect(rebound.role).toMatchObject({ uid: editor.uid, name: "editor" });
    const kept = await c.roleBindings.updateRoleBinding({
      roleBinding: { uid: created.uid, roleUid: viewer.uid },
      updateMask: { paths: ["create_time"] },
    });
    expect(kept.role?.uid).toBe(editor.uid);
    const masked = await c.roleBindings.updateRoleBinding({
      roleBinding: { uid: created.uid, roleUid: viewer.uid },
      updateMask: { paths: ["role_uid"] },
    });
    expect(masked.role?.uid).toBe(viewer.uid);

    await c.roleBindings.deleteRoleBinding({ uid: created.uid });
    expect(await failure(c.roleBindings.getRoleBinding({ uid: created.uid }))).toMatchObject({
      code: 5,
    });
  });

  it("binds a person already in the organization, and refuses a stranger as a missing one", async () => {
    const person = await ts.makeOrg("persons-own");
    // Not in this organization: refused exactly as an identity that does not exist, so that
    // nobody learns whether a person exists, or their name, by binding them.
    const stranger = await failure(bind(group, person.owner.uid, viewer.uid));
    const missing = await failure(bind(group, newChildUid(group), viewer.uid));
    expect(stranger).toMatchObject({ code: 3, fields: ["identityUid"] });
    expect(stranger).toEqual(missing);
    // Once in it (here through a binding elsewhere in the organization), bindable anywhere in it.
    await ts.store.createRoleBinding({
      uid: newChildUid(org.uid),
      groupUid: org.uid,
      identityUid: person.owner.uid,
      roleUid: viewer.uid,
      now: Date.now(),
    });
    const b = await bind(group, person.owner.uid, editor.uid);
    expect(b.identity?.uid).toBe(person.owner.uid);
  });

  it("refuses an identity of another organization exactly as a missing one", async () => {
    const foreign = await ts.makeIdentity(other.uid);
    const a = await failure(bind(group, foreign.uid, viewer.uid));
    const b = await failure(bind(group, newChildUid(group), viewer.uid));
    expect(a).toMatchObject({ code: 3, fields: ["identityUid"] });
    expect(b).toEqual(a);
  });

  it("refuses a role from another organization, from below, or missing, alike", async () => {
    const now = Date.now();
    const foreignRole = newChildUid(other.uid);
    await ts.store.createRole({
      uid: foreignRole,
      groupUid: other.uid,
      name: "theirs",
      description: "",
      capabilities: ["groups.list"],
      now,
    });
    const below = newChildUid(group);
    await ts.store.createGroup({
      uid: below,
      parentUid: group,
      name: "below",
      description: "",
      now,
    });
    const lowRole = newChildUid(below);
    await ts.store.createRole({
      uid: lowRole,
      groupUid: below,
      name: "low",
      description: "",
      capabilities: ["groups.list"],
      now,
    });
    const errors = await Promise.all(
      [foreignRole, lowRole, newChildUid(org.uid)].map((r) => failure(bind(group, bob.uid, r))),
    );
    for (const e of errors) expect(e).toEqual(errors[0]);
    expect(errors[0]).toMatchObject({ code: 3, fields: ["roleUid"] });
  });

  it("rejects missing and malformed uids with field violations", async () => {
    const err = await failure(
      c.roleBindings.createRoleBinding({ parent: group, roleBinding: { identityUid: "x" } }),
    );
    expect(err).toMatchObject({ code: 3, fields: ["identityUid", "roleUid"] });
    const filter = await failure(c.roleBindings.listRoleBindings({ identity: "nope" }));
    expect(filter).toMatchObject({ code: 3, fields: ["identity"] });
  });

  it("lets the owner grant owner below", async () => {
    const b = await bind(group, bob.uid, ownerRole.uid);
    expect(b.role?.name).toBe("owner");
  });
});

describe("an organization's last owner", () => {
  it("cannot be unbound, demoted or deleted; with a second owner it can", async () => {
    const lone = await ts.makeOrg("lone-owner");
    const rest = (method: string, path: string, body?: unknown) =>
      restCall(ts.url, method, path, body, lone.owner.headers);
    const listed = await rest(
      "GET",
      `/iam/v2beta1/roleBindings?uidp.childrenOf=${lone.uid}&identity=${lone.owner.uid}`,
    );
    const [binding] = listed.json.roleBindings as { uid: string }[];
    const path = `/iam/v2beta1/roleBindings/${binding!.uid}`;

    const refused = await rest("DELETE", path);
    expect(refused.status).toBe(400);
    expect(refused.json).toMatchObject({
      code: 9,
      message: expect.stringMatching(/^Precondition failed: organization .* no owner left/),
    });
    expect((await rest("PATCH", path, { roleUid: viewer.uid })).json).toMatchObject({ code: 9 });
    expect((await rest("GET", path)).json).toMatchObject({ role: { name: "owner" } });

    const deputy = await ts.makeIdentity(lone.uid, ["owner"]);
    expect((await rest("DELETE", path)).status).toBe(200);
    const asDeputy = iamClients(transportFor("connect", ts.url, deputy.headers));
    expect(await failure(asDeputy.identities.deleteIdentity({ uid: deputy.uid }))).toMatchObject({
      code: 9,
    });
  });
});
