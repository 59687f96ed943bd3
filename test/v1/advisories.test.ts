import { createClient } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import {
  AdvisoriesService,
  AdvisorySchema,
  EventType,
} from "../../gen/gatehouse/vulnerabilities/v2beta1/advisories_pb.js";
import { newChildUid } from "../../src/uid.js";
import { apiJson } from "../helpers/api-json.js";
import { transportFor } from "../helpers/iam-clients.js";
import type { Json } from "../helpers/rest-client.js";
import { type TestCaller, type TestOrg, useTestServer } from "../helpers/test-server.js";
import {
  idsOf,
  okJson as ok,
  uidpIds,
  type V1Client,
  v1Client,
  v1Protocols,
  v1Resources,
} from "../helpers/v1-clients.js";

const { advisories } = v1Resources;
let org: TestOrg;
let admin: TestCaller;

const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("v1-advisories");
  // The owner role leaves advisory writes out; advisories.admin holds them.
  admin = await ts.makeIdentity(org.uid, ["advisories.admin"]);
});

describe.each(v1Protocols)("v1 advisories over %s", (protocol) => {
  let c: V1Client;
  let group: string;
  const v2 = () => createClient(AdvisoriesService, transportFor("connect", ts.url, admin.headers));
  beforeAll(async () => {
    c = v1Client(protocol, ts.url, admin.headers);
    group = newChildUid(org.uid);
    await ts.store.createGroup({
      uid: group,
      parentUid: org.uid,
      name: protocol,
      description: "",
      now: 1,
    });
  });
  /** Create through v1: over REST the parent is in the body, at the collection's path. */
  const make = (advisory: Json) =>
    c.call(
      advisories,
      "Create",
      { parentId: group, advisory },
      {
        method: "POST",
        path: "/vulnerabilities/v1/advisories",
        body: { parentId: group, advisory },
      },
    );

  it("creates, lists, replaces and deletes, agreeing with v2 and keeping v2's summary", async () => {
    const made = ok(
      await make({
        advisoryId: "GO-2024-0001",
        aliases: ["CVE-2024-0001"],
        artifactName: "app",
        componentName: "lib",
        events: [
          { timestamp: "2024-01-02T03:04:05.000Z", detection: { manual: {} } },
          { timestamp: "2024-01-03T03:04:05.000Z", fixed: { fixedVersion: "1.2", note: "n" } },
        ],
      }),
    );
    const id = made.id as string;
    const through2 = await v2().getAdvisory({ uid: id });
    expect(through2.events.map((e) => [e.type, e.fixedVersion])).toEqual([
      [EventType.DETECTED, ""],
      [EventType.FIXED, "1.2"],
    ]);
    const json = apiJson(AdvisorySchema, through2 as never) as Json;
    expect(made).toMatchObject({
      id: json.uid,
      advisoryId: json.advisoryId,
      aliases: json.aliases,
      artifactName: json.artifactName,
      componentName: json.componentName,
      createdAt: json.createTime,
      updatedAt: json.updateTime,
    });
    expect(made.events[0]).toMatchObject({ detection: { manual: {} } });
    expect(Date.parse(made.events[0].timestamp)).toBe(Date.parse(json.events[0].time));
    expect(made.events[1]).toMatchObject({ fixed: { fixedVersion: "1.2", note: "n" } });

    expect(await uidpIds(c, advisories, "children_of", group)).toEqual([id]);
    expect(await uidpIds(c, advisories, "descendants_of", org.uid)).toContain(id);
    expect(await uidpIds(c, advisories, "ancestors_of", `${id}/x`)).toEqual([id]);
    for (const key of ["advisory_ids", "advisoryIds"]) {
      expect(
        idsOf(
          ok(
            await c.list(advisories, [
              [key, "GO-2024-0001"],
              ["uidp.childrenOf", group],
            ]),
          ),
        ),
      ).toEqual([id]);
    }
    expect(ok(await c.list(advisories, [["id", id]])).items).toEqual([made]);
    expect(ok(await c.list(advisories, [["id", `${group}/ffffffffffffffff`]])).items).toEqual([]);

    await v2().updateAdvisory({
      advisory: { uid: id, summary: "kept" },
      updateMask: { paths: ["summary"] },
    });
    const put = ok(await c.update(advisories, id, { advisoryId: "GO-2024-0001" }));
    expect(put).toMatchObject({ id, aliases: [], artifactName: "", events: [] });
    expect(await v2().getAdvisory({ uid: id })).toMatchObject({ summary: "kept", aliases: [] });

    expect(ok(await c.delete(advisories, id))).toEqual({});
    expect(ok(await c.list(advisories, [["id", id]])).items).toEqual([]);
  });

  it("pages as v1's advisories List did", async () => {
    const parentId = newChildUid(org.uid);
    await ts.store.createGroup({
      uid: parentId,
      parentUid: org.uid,
      name: `p-${protocol}`,
      description: "",
      now: 1,
    });
    for (const n of [1, 2, 3]) {
      const advisory = { advisoryId: `GO-2024-100${n}` };
      ok(
        await c.call(
          advisories,
          "Create",
          { parentId, advisory },
          { method: "POST", path: "/vulnerabilities/v1/advisories", body: { parentId, advisory } },
        ),
      );
    }
    const first = ok(
      await c.list(advisories, [
        ["uidp.childrenOf", parentId],
        ["pageSize", "2"],
      ]),
    );
    expect(first.items).toHaveLength(2);
    expect(first.totalCount).toBe("3");
    const second = ok(
      await c.list(advisories, [
        ["uidp.childrenOf", parentId],
        ["pageSize", "2"],
        ["pageToken", first.nextPageToken],
      ]),
    );
    expect(second.items).toHaveLength(1);

    // v1's order_by is honoured: by id (the default) either way, and by creation time.
    const ids = (r: Json) => r.items.map((a: Json) => a.id);
    const inOrder = async (orderBy?: string) =>
      ids(
        ok(
          await c.list(advisories, [
            ["uidp.childrenOf", parentId],
            ...(orderBy ? [["orderBy", orderBy] as [string, string]] : []),
          ]),
        ),
      );
    const byId = await inOrder();
    expect(byId).toEqual([...byId].sort());
    expect(await inOrder("ID_ASC")).toEqual(byId);
    expect(await inOrder("ID_DESC")).toEqual([...byId].reverse());
    const created = ok(
      await c.list(advisories, [
        ["uidp.childrenOf", parentId],
        ["orderBy", "CREATED_AT_DESC"],
      ]),
    );
    const times = created.items.map((a: Json) => Date.parse(a.createdAt));
    expect(times).toEqual([...times].sort((a: number, b: number) => b - a));
    // An order v2 cannot give is refused, never ignored.
    const aliases = await c.list(advisories, [
      ["uidp.childrenOf", parentId],
      ["orderBy", "ALIASES_ASC"],
    ]);
    expect(aliases).toMatchObject({ ok: false, code: 3 });
  });

  it("refuses writes to a caller v2 refuses them to", async () => {
    const owner = v1Client(protocol, ts.url, org.owner.headers);
    const r = await owner.call(
      advisories,
      "Create",
      { parentId: group, advisory: { advisoryId: "GO-2024-9999" } },
      {
        method: "POST",
        path: "/vulnerabilities/v1/advisories",
        body: { parentId: group, advisory: { advisoryId: "GO-2024-9999" } },
      },
    );
    expect(r).toMatchObject({ ok: false, code: 7 });
  });
});
