import { createClient } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { RepoSchema, ReposService } from "../../gen/gatehouse/registry/v2beta1/repos_pb.js";
import { TagSchema, TagsService } from "../../gen/gatehouse/registry/v2beta1/tags_pb.js";
import { newChildUid } from "../../src/uid.js";
import { apiJson } from "../helpers/api-json.js";
import { transportFor } from "../helpers/iam-clients.js";
import { digestOf } from "../helpers/registry-clients.js";
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

const { repos, tags } = v1Resources;
let org: TestOrg;

const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("v1-registry");
});

const transport = () => transportFor("connect", ts.url, org.owner.headers);
const newGroup = async (name: string) => {
  const uid = newChildUid(org.uid);
  await ts.store.createGroup({ uid, parentUid: org.uid, name, description: "", now: 1 });
  return uid;
};

describe.each(v1Protocols)("v1 registry over %s", (protocol) => {
  let c: V1Client;
  let group: string;
  const v2Repos = () => createClient(ReposService, transport());
  const v2Tags = () => createClient(TagsService, transport());
  beforeAll(async () => {
    c = v1Client(protocol, ts.url, org.owner.headers);
    group = await newGroup(`registry-${protocol}`);
  });

  it("creates, lists, replaces and deletes repos, agreeing with v2", async () => {
    const made = ok(
      await c.create(repos, group, { name: "app", description: "d", aliases: ["a"] }),
    );
    const id = made.id as string;
    const json = apiJson(RepoSchema, (await v2Repos().getRepo({ uid: id })) as never) as Json;
    expect(made).toEqual({
      id: json.uid,
      name: json.name,
      description: json.description,
      aliases: json.aliases,
      createTime: json.createTime,
    });
    expect(await uidpIds(c, repos, "children_of", group)).toEqual([id]);
    expect(await uidpIds(c, repos, "descendants_of", org.uid)).toContain(id);
    expect(await uidpIds(c, repos, "ancestors_of", `${id}/x`)).toEqual([id]);
    expect(await uidpIds(c, repos, "in_root", "true")).toEqual([]);
    expect(idsOf(ok(await c.list(repos, [["uidp.ids", id]])))).toEqual([id]);
    expect(
      idsOf(
        ok(
          await c.list(repos, [
            ["name", "app"],
            ["uidp.childrenOf", group],
          ]),
        ),
      ),
    ).toEqual([id]);
    expect(ok(await c.list(repos, [["id", id]]))).toEqual({ items: [made] });
    expect(ok(await c.list(repos, [["id", `${group}/ffffffffffffffff`]]))).toEqual({ items: [] });

    // What v1 does not show is kept: a public repo stays public.
    await v2Repos().updateRepo({
      repo: { uid: id, public: true },
      updateMask: { paths: ["public"] },
    });
    const put = ok(await c.update(repos, id, { name: "app" }));
    expect((await v2Repos().getRepo({ uid: id })).public).toBe(true);
    expect(put).toMatchObject({ id, name: "app", description: "", aliases: [] });
    expect(await v2Repos().getRepo({ uid: id })).toMatchObject({ description: "", aliases: [] });

    expect(ok(await c.delete(repos, id))).toEqual({});
    expect(ok(await c.list(repos, [["id", id]]))).toEqual({ items: [] });
  });

  it("replaces a repo of the same name on Create, unless preventExisting", async () => {
    const first = ok(await c.create(repos, group, { name: "same", description: "one" }));
    const again = ok(await c.create(repos, group, { name: "same", description: "two" }));
    expect(again).toMatchObject({ id: first.id, description: "two" });
    const refused = await c.call(
      repos,
      "CreateRepo",
      { parentId: group, repo: { name: "same" }, preventExisting: true },
      {
        method: "POST",
        path: `/registry/v1/repos/${group}?preventExisting=true`,
        body: { name: "same" },
      },
    );
    expect(refused).toMatchObject({ ok: false, code: 6 });
  });

  it("creates, moves, lists with its filters and deletes tags, agreeing with v2", async () => {
    const repo = ok(await c.create(repos, group, { name: "tagged" })).id as string;
    const made = ok(await c.create(tags, repo, { name: "latest", digest: digestOf("a") }));
    const id = made.id as string;
    const json = apiJson(TagSchema, (await v2Tags().getTag({ uid: id })) as never) as Json;
    expect(made).toEqual({
      id: json.uid,
      name: json.name,
      digest: json.digest,
      deprecated: json.deprecated,
      lastUpdated: json.updateTime,
    });
    const dated = ok(await c.create(tags, repo, { name: "1.0-20260101", digest: digestOf("b") }));
    const epoch = ok(await c.create(tags, repo, { name: "1.0-r2", digest: digestOf("c") }));
    const referrer = ok(
      await c.create(tags, repo, { name: `sha256-${"d".repeat(64)}.sig`, digest: digestOf("d") }),
    );
    const all = [id, dated.id, epoch.id, referrer.id].sort();
    expect(await uidpIds(c, tags, "children_of", repo)).toEqual(all);
    expect(await uidpIds(c, tags, "descendants_of", group)).toEqual(all);
    for (const [key, gone] of [
      ["exclude_dates", dated.id],
      ["excludeDates", dated.id],
      ["exclude_epochs", epoch.id],
      ["excludeEpochs", epoch.id],
      ["exclude_referrers", referrer.id],
      ["excludeReferrers", referrer.id],
    ]) {
      const listed = idsOf(
        ok(
          await c.list(tags, [
            ["uidp.childrenOf", repo],
            [key!, "true"],
          ]),
        ),
      );
      expect(listed).toEqual(all.filter((x) => x !== gone));
    }
    expect(
      idsOf(
        ok(
          await c.list(tags, [
            ["uidp.childrenOf", repo],
            ["digest", digestOf("a")],
          ]),
        ),
      ),
    ).toEqual([id]);
    expect(ok(await c.list(tags, [["id", id]]))).toEqual({ items: [made] });
    expect(ok(await c.list(tags, [["id", `${repo}/ffffffffffffffff`]]))).toEqual({ items: [] });

    // Update moves the tag; a digest left out stays, the name cannot change.
    const moved = ok(await c.update(tags, id, { digest: digestOf("e"), deprecated: true }));
    expect(moved).toMatchObject({ id, name: "latest", digest: digestOf("e"), deprecated: true });
    const kept = ok(await c.update(tags, id, { name: "latest" }));
    expect(kept).toMatchObject({ id, digest: digestOf("e"), deprecated: false });
    expect(await v2Tags().getTag({ uid: id })).toMatchObject({
      digest: digestOf("e"),
      deprecated: false,
    });
    expect(await c.update(tags, id, { name: "other" })).toMatchObject({ ok: false, code: 3 });

    expect(ok(await c.delete(tags, id))).toEqual({});
    expect(ok(await c.list(tags, [["id", id]]))).toEqual({ items: [] });
  });
});
