import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { beforeAll, describe, expect, it } from "vitest";
import type { ListTagsRequestSchema, Tag } from "../../gen/gatehouse/registry/v2beta1/tags_pb.js";
import {
  digestOf,
  failure,
  protocols,
  type RegistryClients,
  registryClients,
  tick,
} from "../helpers/registry-clients.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();

const ms = (t: Tag["updateTime"]) => Number(t!.seconds) * 1000 + Math.floor(t!.nanos / 1e6);

describe.each(protocols)("tags over %s", (protocol) => {
  let c: RegistryClients;
  let org: string;
  let repo: string;
  beforeAll(async () => {
    const acme = await ts.makeOrg("acme");
    org = acme.uid;
    c = registryClients(ts.url, protocol, acme.owner.token);
    repo = (await c.repos.createRepo({ parent: org, repo: { name: "app" } })).uid;
  });

  it("creates a tag under its repo and moves it when the name is created again", async () => {
    const first = await c.tags.createTag({
      parent: repo,
      tag: { name: "latest", digest: digestOf("1") },
    });
    expect(first.uid).toMatch(new RegExp(`^${repo}/[0-9a-f]{16}$`));
    await tick();
    const moved = await c.tags.createTag({
      parent: repo,
      tag: { name: "latest", digest: digestOf("2"), deprecated: true },
    });
    expect(moved).toMatchObject({
      uid: first.uid,
      digest: digestOf("2"),
      deprecated: true,
      createTime: first.createTime,
    });
    expect(ms(moved.updateTime)).toBeGreaterThan(ms(first.updateTime));
    expect(await c.tags.getTag({ uid: first.uid })).toEqual(moved);
    const listed = await c.tags.listTags({ uidp: { childrenOf: repo }, name: "latest" });
    expect(listed.tags).toEqual([moved]);
    await c.tags.deleteTag({ uid: first.uid });
    expect((await failure(c.tags.getTag({ uid: first.uid }))).code).toBe(5);
    expect((await failure(c.tags.deleteTag({ uid: first.uid }))).code).toBe(5);
  });

  it("validates names and digests per field", async () => {
    const err = await failure(
      c.tags.createTag({ parent: repo, tag: { name: ".bad", digest: "sha256:xyz" } }),
    );
    expect(err).toMatchObject({ code: 3, fields: ["name", "digest"] });
    const long = await failure(
      c.tags.createTag({ parent: repo, tag: { name: "a".repeat(129), digest: digestOf("1") } }),
    );
    expect(long.fields).toEqual(["name"]);
    await c.tags.createTag({ parent: repo, tag: { name: "a".repeat(128), digest: digestOf("1") } });
    const missing = await failure(
      c.tags.createTag({ parent: `${repo}0`, tag: { name: "x", digest: digestOf("1") } }),
    );
    expect(missing.code).toBe(3);
    const gone = await failure(
      c.tags.createTag({
        parent: `${org}/ffffffffffffffff`,
        tag: { name: "x", digest: digestOf("1") },
      }),
    );
    expect(gone.code).toBe(5);
  });

  it("filters by digest, updatedSince and referrers, newest first with paging", async () => {
    const r = (await c.repos.createRepo({ parent: org, repo: { name: "filtered" } })).uid;
    const referrer = `sha256-${"a".repeat(64)}`;
    const order = ["v1", "v2", referrer, "v3", "v4", "v5", "v1"];
    const times = new Map<string, number>();
    for (const [i, name] of order.entries()) {
      const t = await c.tags.createTag({
        parent: r,
        tag: { name, digest: digestOf(i % 2 === 0 ? "e" : "f") },
      });
      times.set(name, ms(t.updateTime));
      await tick();
    }
    // Newest first: v1 moved last.
    const newest = ["v1", "v5", "v4", "v3", referrer, "v2"];
    const pages: string[] = [];
    let pageToken = "";
    for (let i = 0; i < 10; i++) {
      const page = await c.tags.listTags({
        uidp: { childrenOf: r },
        orderBy: "update_time desc",
        pageSize: 4,
        pageToken,
      });
      expect(page.totalCount).toBe(6n);
      pages.push(...page.tags.map((t) => t.name));
      pageToken = page.nextPageToken ?? "";
      if (!pageToken) break;
    }
    expect(pages).toEqual(newest);

    const names = async (req: Omit<MessageInitShape<typeof ListTagsRequestSchema>, "$typeName">) =>
      (
        await c.tags.listTags({ uidp: { childrenOf: r }, orderBy: "updateTime desc", ...req })
      ).tags.map((t) => t.name);
    expect(await names({ excludeReferrers: true })).toEqual(newest.filter((n) => n !== referrer));
    expect(await names({ digest: digestOf("e") })).toEqual(["v1", "v4", referrer]);
    const since = times.get("v4")!;
    expect(await names({ updatedSince: timestampFromMs(since) })).toEqual(["v1", "v5", "v4"]);
    expect(await names({ updatedSince: timestampFromMs(since), excludeReferrers: true })).toEqual([
      "v1",
      "v5",
      "v4",
    ]);
    const token = (
      await c.tags.listTags({ uidp: { childrenOf: r }, pageSize: 1, excludeReferrers: true })
    ).nextPageToken;
    const reused = await failure(
      c.tags.listTags({ uidp: { childrenOf: r }, pageSize: 1, pageToken: token ?? "" }),
    );
    expect(reused).toMatchObject({ code: 3, fields: ["page_token"] });
    expect((await failure(c.tags.listTags({ digest: "nope" }))).fields).toEqual(["digest"]);
    // Tags are found through their group too.
    const all = await c.tags.listTags({ uidp: { descendantsOf: org }, name: "v5" });
    expect(all.tags.map((t) => t.name)).toEqual(["v5"]);
  });
});
