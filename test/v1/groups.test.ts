import { createClient } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { GroupSchema, GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { apiJson } from "../helpers/api-json.js";
import { transportFor } from "../helpers/iam-clients.js";
import { restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";
import { type V1Client, v1Client, v1Protocols, v1Resources } from "../helpers/v1-clients.js";

const groups = v1Resources.groups;
let org: TestOrg;

const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("v1-groups");
});

const v2 = () => createClient(GroupsService, transportFor("connect", ts.url, org.owner.headers));
/** A v2 group as v2 REST shows it, for comparing with v1. */
const v2Json = async (uid: string) =>
  apiJson(GroupSchema, (await v2().getGroup({ uid })) as never) as Record<string, unknown>;

describe.each(v1Protocols)("v1 Groups over %s", (protocol) => {
  let c: V1Client;
  beforeAll(() => {
    c = v1Client(protocol, ts.url, org.owner.headers);
  });

  it("creates a group from the bare resource and reads the same through v2", async () => {
    const made = await c.create(groups, org.uid, { name: `team-${protocol}`, description: "d" });
    expect(made.ok).toBe(true);
    if (!made.ok) return;
    expect(made.json).toMatchObject({
      name: `team-${protocol}`,
      description: "d",
      verified: false,
    });
    expect(made.json.id).toMatch(new RegExp(`^${org.uid}/`));
    const through2 = await v2Json(made.json.id);
    expect(through2).toEqual({
      uid: made.json.id,
      name: made.json.name,
      description: made.json.description,
      resourceLimits: made.json.resourceLimits,
      verified: made.json.verified,
      createTime: through2.createTime,
      updateTime: through2.updateTime,
    });
    expect(made.json).not.toHaveProperty("uid");
    // v1's Group has no timestamps: an answer carries only v1's fields.
    expect(made.json).not.toHaveProperty("createdAt");
    expect(made.json).not.toHaveProperty("updatedAt");
  });

  it("lists with each filter spelling, and by id", async () => {
    const parent = await c.create(groups, org.uid, { name: `parent-${protocol}` });
    if (!parent.ok) throw new Error("create failed");
    const p = parent.json.id as string;
    const kid = await c.create(groups, p, { name: "kid" });
    const grandkid = kid.ok ? await c.create(groups, kid.json.id, { name: "grandkid" }) : kid;
    if (!kid.ok || !grandkid.ok) throw new Error("create failed");
    const ids = async (query: [string, string][]) => {
      const r = await c.list(groups, query);
      if (!r.ok) throw new Error(`list failed: ${r.code}`);
      expect(Object.keys(r.json)).toEqual(["items"]);
      return (r.json.items as { id: string }[]).map((g) => g.id).sort();
    };
    for (const key of ["uidp.children_of", "uidp.childrenOf"]) {
      expect(await ids([[key, p]])).toEqual([kid.json.id]);
    }
    for (const key of ["uidp.descendants_of", "uidp.descendantsOf"]) {
      expect(await ids([[key, p]])).toEqual([kid.json.id, grandkid.json.id].sort());
    }
    for (const key of ["uidp.ancestors_of", "uidp.ancestorsOf"]) {
      expect(await ids([[key, grandkid.json.id]])).toEqual([org.uid, p, kid.json.id].sort());
    }
    for (const key of ["uidp.in_root", "uidp.inRoot"]) {
      const roots = await ids([[key, "true"]]);
      expect(roots).toContain(org.uid);
      expect(roots.every((id) => !id.includes("/"))).toBe(true);
    }
    expect(
      await ids([
        ["uidp.ids", kid.json.id],
        ["uidp.ids", grandkid.json.id],
      ]),
    ).toEqual([kid.json.id, grandkid.json.id].sort());
    expect(
      await ids([
        ["name", "grandkid"],
        ["uidp.descendants_of", p],
      ]),
    ).toEqual([grandkid.json.id]);
    expect(
      await ids([
        ["uidp.descendantsOf", p],
        ["name", "kid"],
      ]),
    ).toEqual([kid.json.id]);
    // No Get: a List by id, and a missing one is an empty list.
    const one = await c.list(groups, [["id", kid.json.id]]);
    expect(one).toEqual({ ok: true, json: { items: [kid.json] } });
    const none = await c.list(groups, [["id", `${p}/ffffffffffffffff`]]);
    expect(none).toEqual({ ok: true, json: { items: [] } });
  });

  it("replaces the whole group on Update: a field left out is reset", async () => {
    const made = await c.create(groups, org.uid, {
      name: `full-${protocol}`,
      description: "keep?",
    });
    if (!made.ok) throw new Error("create failed");
    const id = made.json.id as string;
    // The id comes from the path; one in the body is ignored.
    const put = await c.update(groups, id, {
      id: `${org.uid}/0000000000000000`,
      name: `renamed-${protocol}`,
    });
    expect(put).toMatchObject({
      ok: true,
      json: { id, name: `renamed-${protocol}`, description: "" },
    });
    expect(await v2Json(id)).toMatchObject({ name: `renamed-${protocol}`, description: "" });
  });

  it("deletes, answering {}", async () => {
    const made = await c.create(groups, org.uid, { name: `gone-${protocol}` });
    if (!made.ok) throw new Error("create failed");
    expect(await c.delete(groups, made.json.id)).toEqual({ ok: true, json: {} });
    expect(await c.list(groups, [["id", made.json.id]])).toEqual({ ok: true, json: { items: [] } });
  });

  it("shows a group written through v2 as v1 does", async () => {
    const g = await v2().createGroup({
      parent: org.uid,
      group: { name: `from-v2-${protocol}`, description: "x" },
    });
    const listed = await c.list(groups, [["id", g.uid]]);
    const json = apiJson(GroupSchema, g as never) as Record<string, unknown>;
    expect(listed).toEqual({
      ok: true,
      json: {
        items: [
          {
            id: json.uid,
            name: json.name,
            description: json.description,
            resourceLimits: json.resourceLimits,
            verified: json.verified,
          },
        ],
      },
    });
  });
});

describe("v1 Groups over REST only", () => {
  it("ignores unknown query keys and body fields, as v1 did", async () => {
    const c = v1Client("rest", ts.url, org.owner.headers);
    const made = await c.create(groups, org.uid, { name: "lenient", kind: "ORG_KIND_CUSTOMER" });
    expect(made).toMatchObject({ ok: true, json: { name: "lenient" } });
    const listed = await c.list(groups, [
      ["name", "lenient"],
      ["pageSize", "1"],
      ["nonsense", "x"],
    ]);
    expect(listed.ok && listed.json.items).toHaveLength(1);
  });

  it("answers errors as a google.rpc.Status body with the code's HTTP status", async () => {
    const anonymous = await restCall(ts.url, "GET", "/iam/v1/groups");
    expect(anonymous).toMatchObject({ status: 401, json: { code: 16 } });
    const bad = await restCall(
      ts.url,
      "POST",
      `/iam/v1/groups/${org.uid}`,
      { name: "NOT valid!" },
      org.owner.headers,
    );
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.json).sort()).toEqual(["code", "details", "message"]);
    expect(bad.json.code).toBe(3);
    expect(Array.isArray(bad.json.details)).toBe(true);
    const missing = await restCall(
      ts.url,
      "DELETE",
      `/iam/v1/groups/${org.uid}/ffffffffffffffff`,
      undefined,
      org.owner.headers,
    );
    expect(missing).toMatchObject({ status: 404, json: { code: 5 } });
  });

  it("creates an organization with POST /iam/v1/groups", async () => {
    const c = v1Client("rest", ts.url, org.owner.headers);
    const r = await c.call(
      groups,
      "Create",
      {},
      { method: "POST", path: "/iam/v1/groups", body: { name: "new-org" } },
    );
    expect(r).toMatchObject({ ok: true, json: { name: "new-org" } });
    expect(r.ok && r.json.id).not.toContain("/");
  });
});
