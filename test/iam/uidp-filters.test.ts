import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newChildUid } from "../../src/uid.js";
import { connectErr } from "../helpers/groups-clients.js";
import { iamClients, transportFor } from "../helpers/iam-clients.js";
import { badRequestFields, restCall } from "../helpers/rest-client.js";
import {
  type Backend,
  backends,
  startTestServer,
  type TestCaller,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

// The UIDP filters of the real service's SDK on the v2 Lists: uidp.ancestors_of, uidp.in_root
// and uidp.ids (repeatable), besides descendants_of and children_of, over REST, gRPC and
// Connect. They AND together, and with the caller's scope: a List still shows only what the
// caller may list.

const wire = ["rest", "grpc", "connect"] as const;
type Wire = (typeof wire)[number];

interface Uidp {
  ancestorsOf?: string;
  inRoot?: boolean;
  ids?: string[];
  descendantsOf?: string;
}

/** What a List answered: the uids and the total, or the error's code and BadRequest fields. */
type Answer =
  | { ok: true; uids: string[]; total: bigint; next: string }
  | { ok: false; code: number; fields: string[] };

async function listGroups(
  ts: TestServer,
  over: Wire,
  who: TestCaller,
  uidp: Uidp,
  page: { pageSize?: number; pageToken?: string } = {},
): Promise<Answer> {
  if (over === "rest") {
    const q = new URLSearchParams({ orderBy: "uid" });
    if (uidp.ancestorsOf) q.set("uidp.ancestorsOf", uidp.ancestorsOf);
    if (uidp.descendantsOf) q.set("uidp.descendantsOf", uidp.descendantsOf);
    if (uidp.inRoot) q.set("uidp.inRoot", "true");
    for (const id of uidp.ids ?? []) q.append("uidp.ids", id);
    if (page.pageSize) q.set("pageSize", String(page.pageSize));
    if (page.pageToken) q.set("pageToken", page.pageToken);
    const r = await restCall(ts.url, "GET", `/iam/v2beta1/groups?${q}`, undefined, who.headers);
    if (r.status !== 200) return { ok: false, code: r.json.code, fields: badRequestFields(r.json) };
    return {
      ok: true,
      uids: (r.json.groups ?? []).map((g: { uid: string }) => g.uid),
      total: BigInt(r.json.totalCount),
      next: r.json.nextPageToken ?? "",
    };
  }
  const c = iamClients(transportFor(over, ts.url, who.headers));
  try {
    const res = await c.groups.listGroups({
      uidp: { descendantsOf: "", childrenOf: "", ...uidp },
      orderBy: "uid",
      ...page,
    });
    return {
      ok: true,
      uids: res.groups.map((g) => g.uid),
      total: res.totalCount,
      next: res.nextPageToken ?? "",
    };
  } catch (e) {
    const err = connectErr(e);
    return { ok: false, code: err.code, fields: err.fields };
  }
}

const sorted = (uids: string[]) => [...uids].sort();

describe.each(backends)("uidp filters on every List, on %s", (backend: Backend) => {
  let ts: TestServer;
  let org: TestOrg;
  let other: TestOrg;
  // org > g1 > g2 > g3, and org > side; a repo in g2.
  let g1: string;
  let g2: string;
  let g3: string;
  let side: string;
  let repo: string;
  /** A viewer bound at g1: it may list g1's subtree, not the organization or `side`. */
  let viewer: TestCaller;

  beforeAll(async () => {
    ts = await startTestServer({}, { backend });
    org = await ts.makeOrg("uidp");
    other = await ts.makeOrg("other");
    g1 = newChildUid(org.uid);
    g2 = newChildUid(g1);
    g3 = newChildUid(g2);
    side = newChildUid(org.uid);
    for (const [uid, parentUid] of [
      [g1, org.uid],
      [g2, g1],
      [g3, g2],
      [side, org.uid],
    ] as const) {
      await ts.store.createGroup({ uid, parentUid, name: uid.slice(-6), description: "", now: 1 });
    }
    repo = newChildUid(g2);
    await ts.store.createRepo({
      uid: repo,
      groupUid: g2,
      name: "app",
      description: "",
      aliases: [],
      now: 1,
    });
    viewer = await ts.makeIdentity(g1, ["viewer"]);
  });
  afterAll(async () => {
    await ts?.close();
  });

  describe.each(wire)("over %s", (over) => {
    it("ancestors_of gives the groups strictly above a uid, as far as the caller may list", async () => {
      expect(await listGroups(ts, over, org.owner, { ancestorsOf: g3 })).toMatchObject({
        ok: true,
        uids: sorted([org.uid, g1, g2]),
        total: 3n,
      });
      // Above a resource: the groups it is in.
      expect(await listGroups(ts, over, org.owner, { ancestorsOf: repo })).toMatchObject({
        uids: sorted([org.uid, g1, g2]),
      });
      // The organization is not the viewer's to list.
      expect(await listGroups(ts, over, viewer, { ancestorsOf: g3 })).toMatchObject({
        uids: sorted([g1, g2]),
        total: 2n,
      });
      // A stranger sees none of it, and an organization has nothing above it.
      expect(await listGroups(ts, over, other.owner, { ancestorsOf: g3 })).toMatchObject({
        uids: [],
        total: 0n,
      });
      expect(await listGroups(ts, over, org.owner, { ancestorsOf: org.uid })).toMatchObject({
        uids: [],
      });
    });

    it("in_root gives the organizations the caller may list", async () => {
      expect(await listGroups(ts, over, org.owner, { inRoot: true })).toMatchObject({
        uids: [org.uid],
        total: 1n,
      });
      expect(await listGroups(ts, over, viewer, { inRoot: true })).toMatchObject({ uids: [] });
    });

    it("ids gives exactly those uids, as far as the caller may list; filters AND together", async () => {
      const ids = [g3, g1, side, other.owner.uid, other.uid];
      expect(await listGroups(ts, over, org.owner, { ids })).toMatchObject({
        uids: sorted([g1, g3, side]),
        total: 3n,
      });
      expect(await listGroups(ts, over, viewer, { ids })).toMatchObject({
        uids: sorted([g1, g3]),
      });
      expect(
        await listGroups(ts, over, org.owner, { ancestorsOf: g3, ids: [org.uid, g2, side] }),
      ).toMatchObject({ uids: sorted([org.uid, g2]), total: 2n });
      expect(
        await listGroups(ts, over, org.owner, { descendantsOf: g1, ids: [g1, g2, g3] }),
      ).toMatchObject({ uids: sorted([g2, g3]) });
      expect(await listGroups(ts, over, org.owner, { inRoot: true, ids: [g1] })).toMatchObject({
        uids: [],
      });
    });

    it("an invalid uid is INVALID_ARGUMENT naming the field", async () => {
      expect(await listGroups(ts, over, org.owner, { ancestorsOf: "not a uid" })).toEqual({
        ok: false,
        code: 3,
        fields: ["uidp.ancestors_of"],
      });
      expect(await listGroups(ts, over, org.owner, { ids: [g1, "nope"] })).toEqual({
        ok: false,
        code: 3,
        fields: ["uidp.ids"],
      });
    });

    it("page tokens carry the filters: reused with others, INVALID_ARGUMENT", async () => {
      const ids = [g1, g2, g3];
      const first = await listGroups(ts, over, org.owner, { ids }, { pageSize: 2 });
      if (!first.ok) throw new Error("the first page failed");
      expect(first.uids).toEqual(sorted(ids).slice(0, 2));
      // The same set in another order is the same filter.
      const rest = await listGroups(
        ts,
        over,
        org.owner,
        { ids: [g3, g2, g1] },
        { pageSize: 2, pageToken: first.next },
      );
      expect(rest).toMatchObject({ ok: true, uids: sorted(ids).slice(2), next: "" });
      for (const uidp of [{ ids: [g1, g2] }, { ids, ancestorsOf: g3 }, { ids, inRoot: true }, {}]) {
        expect(
          await listGroups(ts, over, org.owner, uidp, { pageSize: 2, pageToken: first.next }),
        ).toEqual({ ok: false, code: 3, fields: ["page_token"] });
      }
    });
  });

  it("the filters apply to the other Lists too: repos above a tag, bindings by id", async () => {
    const c = iamClients(transportFor("grpc", ts.url, org.owner.headers));
    const tagUid = newChildUid(repo);
    const q = new URLSearchParams({ "uidp.ancestorsOf": tagUid });
    const repos = await restCall(
      ts.url,
      "GET",
      `/registry/v2beta1/repos?${q}`,
      undefined,
      org.owner.headers,
    );
    expect(repos.status).toBe(200);
    expect(repos.json.repos.map((r: { uid: string }) => r.uid)).toEqual([repo]);
    const bindings = await c.roleBindings.listRoleBindings({});
    const first = bindings.roleBindings[0]!.uid;
    const byId = await c.roleBindings.listRoleBindings({
      uidp: { descendantsOf: "", childrenOf: "", ids: [first] },
    });
    expect(byId.roleBindings.map((b) => b.uid)).toEqual([first]);
    // Built-in roles are the roles at the root.
    const roots = await c.roles.listRoles({
      uidp: { descendantsOf: "", childrenOf: "", inRoot: true },
    });
    expect(roots.roles.length).toBeGreaterThan(0);
    expect(roots.roles.every((r) => !r.uid.includes("/"))).toBe(true);
  });
});
