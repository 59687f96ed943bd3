import { beforeEach, describe, expect, it } from "vitest";
import type { AdvisoryContent } from "../../src/store/advisory-store.js";
import type { Store } from "../../src/store/store.js";
import { listQuery, storeError } from "./store-suite.js";

const R = "a".repeat(40);
const G = `${R}/1111111111111111`;
const OTHER = "b".repeat(40);
const repoA = `${G}/000000000000000a`;
const repoB = `${R}/000000000000000b`;
const digest = (c: string) => `sha256:${c.repeat(64)}`;

let next = 0;
/** A fresh child uid of `parent` whose order follows creation order. */
const childOf = (parent: string) => () => `${parent}/${(++next).toString(16).padStart(16, "0")}`;

const advisory = (advisoryId: string, over: Partial<AdvisoryContent> = {}): AdvisoryContent => ({
  advisoryId,
  aliases: [],
  summary: "",
  artifactName: "",
  componentName: "",
  componentType: "",
  severities: [],
  events: [],
  ...over,
});

/**
 * The registry and advisory part of the store contract; `store()` is the fresh store of the
 * running test. Called from runStoreSuite.
 */
export function registryCases(store: () => Store): void {
  beforeEach(async () => {
    const s = store();
    await s.createGroup({ uid: R, parentUid: "", name: "acme", description: "", now: 1 });
    await s.createGroup({ uid: G, parentUid: R, name: "eng", description: "", now: 1 });
    await s.createGroup({ uid: OTHER, parentUid: "", name: "other", description: "", now: 1 });
  });

  const repo = (uid: string, name: string, now = 10) =>
    store().createRepo({
      uid,
      groupUid: uid.slice(0, uid.lastIndexOf("/")),
      name,
      description: "",
      aliases: [],
      now,
    });

  describe("repos", () => {
    it("creates, reads, updates and deletes a repo", async () => {
      const created = await store().createRepo({
        uid: repoA,
        groupUid: G,
        name: "team/app",
        description: "d",
        aliases: ["app"],
        now: 10,
      });
      expect(created).toEqual({
        uid: repoA,
        groupUid: G,
        name: "team/app",
        description: "d",
        aliases: ["app"],
        public: false,
        createTime: 10,
        updateTime: 10,
      });
      expect(await store().getRepo(repoA)).toEqual(created);
      const updated = await store().updateRepo(repoA, { aliases: ["a", "b"] }, 20);
      expect(updated).toMatchObject({ name: "team/app", aliases: ["a", "b"], updateTime: 20 });
      // public changes alone, and stays when other fields change.
      expect(await store().updateRepo(repoA, { public: true }, 21)).toMatchObject({
        public: true,
        aliases: ["a", "b"],
      });
      expect(await store().updateRepo(repoA, { description: "x" }, 22)).toMatchObject({
        public: true,
      });
      expect((await store().getRepo(repoA))?.public).toBe(true);
      await store().updateRepo(repoA, { public: false }, 23);
      expect((await store().getRepo(repoA))?.public).toBe(false);
      await store().deleteRepo(repoA);
      expect(await store().getRepo(repoA)).toBeUndefined();
      await storeError(() => store().deleteRepo(repoA), "not_found");
      await storeError(() => store().updateRepo(repoA, {}, 1), "not_found");
    });

    it("keeps names unique in a group and refuses a missing group", async () => {
      await repo(repoA, "app");
      await storeError(() => repo(`${G}/00000000000000aa`, "app"), "already_exists");
      await repo(repoB, "app");
      await storeError(() => repo(`${OTHER.replace("b", "c")}/0000000000000001`, "x"), "not_found");
      await repo(`${G}/00000000000000ab`, "web");
      await storeError(
        () => store().updateRepo(`${G}/00000000000000ab`, { name: "app" }, 2),
        "already_exists",
      );
    });

    it("blocks deleting a group with repos, and a repo with tags", async () => {
      await repo(repoA, "app");
      const err = await storeError(() => store().deleteGroup(G), "not_empty");
      expect(err).toMatchObject({ childKind: "repos", parentKind: "group" });
      await store().putTag(
        repoA,
        { name: "v1", digest: digest("1"), deprecated: false },
        childOf(repoA),
        5,
      );
      const tagged = await storeError(() => store().deleteRepo(repoA), "not_empty");
      expect(tagged).toMatchObject({ childKind: "tags", parentKind: "repo" });
    });

    it("lists by tree, name and scope", async () => {
      await repo(repoA, "app", 10);
      await repo(repoB, "app", 11);
      const names = async (q: Parameters<typeof listQuery>[0]) =>
        (await store().listRepos(listQuery(q))).items.map((r) => r.uid);
      expect(await names({})).toEqual([repoA, repoB]);
      expect(await names({ childrenOf: R })).toEqual([repoB]);
      expect(await names({ descendantsOf: G })).toEqual([repoA]);
      expect(await names({ descendantsOf: R })).toEqual([repoA, repoB]);
      expect(await names({ scope: [G] })).toEqual([repoA]);
      expect(await names({ scope: [OTHER] })).toEqual([]);
      expect(await names({ name: "app", order: { field: "create_time", desc: true } })).toEqual([
        repoB,
        repoA,
      ]);
    });
  });

  describe("tags", () => {
    beforeEach(async () => {
      await repo(repoA, "app");
      await repo(repoB, "web");
    });
    const put = (r: string, name: string, d: string, now: number, deprecated = false) =>
      store().putTag(r, { name, digest: digest(d), deprecated }, childOf(r), now);

    it("applies registry pushes once: one creation among concurrent pushes, stale ones skipped", async () => {
      const push = (d: string, time: number) =>
        store().pushTag(
          repoA,
          { name: "v1", digest: digest(d), deprecated: false },
          childOf(repoA),
          time,
        );
      const kinds = (await Promise.all(["1", "2", "3", "4"].map((d, i) => push(d, 100 + i)))).map(
        (r) => r.kind,
      );
      expect(kinds.filter((k) => k === "created")).toHaveLength(1);
      const [tag] = (await store().listTags(listQuery())).items;
      // A redelivery of the tag's digest, and an event older than its last move: unchanged.
      expect((await push(tag!.digest.slice(-1), 500)).kind).toBe("unchanged");
      expect((await push("9", tag!.updateTime - 1)).kind).toBe("unchanged");
      expect((await push("9", 600)).kind).toBe("updated");
      expect((await store().listTags(listQuery())).items).toMatchObject([
        { name: "v1", digest: digest("9"), updateTime: 600 },
      ]);
    });

    it("creates a tag under its repo and moves it on a second put", async () => {
      const first = await put(repoA, "latest", "1", 100);
      expect(first.outcome).toBe("created");
      expect(first.tag).toMatchObject({ repoUid: repoA, name: "latest", digest: digest("1") });
      expect(first.tag.uid.startsWith(`${repoA}/`)).toBe(true);
      const moved = await put(repoA, "latest", "2", 200, true);
      expect(moved.outcome).toBe("updated");
      expect(moved.tag).toEqual({
        ...first.tag,
        digest: digest("2"),
        deprecated: true,
        updateTime: 200,
      });
      // A re-push of the same digest refreshes updateTime.
      expect((await put(repoA, "latest", "2", 300, true)).tag.updateTime).toBe(300);
      expect((await store().listTags(listQuery())).total).toBe(1);
      await storeError(() => put(`${G}/0000000000000fff`, "x", "1", 1), "not_found");
    });

    it("imports tags, leaving identical ones untouched", async () => {
      const tags = [
        { name: "v1", digest: digest("1"), deprecated: false },
        { name: "v2", digest: digest("2"), deprecated: false },
      ];
      expect(await store().importTags(repoA, tags, childOf(repoA), 10)).toEqual([
        "created",
        "created",
      ]);
      const again = [...tags, { name: "v1", digest: digest("3"), deprecated: false }];
      expect(await store().importTags(repoA, again, childOf(repoA), 20)).toEqual([
        "unchanged",
        "unchanged",
        "updated",
      ]);
      const v2 = (await store().listTags(listQuery({ name: "v2" }))).items[0];
      expect(v2?.updateTime).toBe(10);
      await storeError(
        () => store().importTags(`${G}/0000000000000fff`, tags, childOf(G), 1),
        "not_found",
      );
    });

    it("filters by digest, updatedSince and referrers, and orders by update time", async () => {
      await put(repoA, "v1", "1", 100);
      await put(repoA, "v2", "2", 200);
      await put(repoA, `sha256-${"2".repeat(64)}`, "3", 300);
      await put(repoB, "v1", "1", 400);
      await put(repoA, "v1", "4", 500);
      const names = async (q: Parameters<typeof listQuery>[0]) =>
        (await store().listTags(listQuery(q) as never)).items.map((t) => t.name);
      const newest = { order: { field: "update_time" as const, desc: true } };
      expect(await names({ ...newest })).toEqual(["v1", "v1", `sha256-${"2".repeat(64)}`, "v2"]);
      expect(await names({ ...newest, childrenOf: repoA })).toEqual([
        "v1",
        `sha256-${"2".repeat(64)}`,
        "v2",
      ]);
      const filtered = (filters: object) =>
        store().listTags({ ...listQuery(newest), filters } as never);
      expect((await filtered({ digest: digest("1") })).items.map((t) => t.repoUid)).toEqual([
        repoB,
      ]);
      expect((await filtered({ updatedSince: 300 })).total).toBe(3);
      expect((await filtered({ excludeReferrers: true })).items.map((t) => t.name)).toEqual([
        "v1",
        "v1",
        "v2",
      ]);
      expect((await store().listTags(listQuery({ scope: [G] }))).total).toBe(3);
      expect((await store().listTags(listQuery({ descendantsOf: G }))).total).toBe(3);
    });

    it("deletes a tag and reports a missing one", async () => {
      const { tag } = await put(repoA, "v1", "1", 1);
      await store().deleteTag(tag.uid);
      expect(await store().getTag(tag.uid)).toBeUndefined();
      await storeError(() => store().deleteTag(tag.uid), "not_found");
      await store().deleteRepo(repoA);
    });
  });

  describe("advisories", () => {
    const a1 = `${G}/00000000000000a1`;
    const a2 = `${R}/00000000000000a2`;

    it("keeps events in time order and derives the latest type", async () => {
      const created = await store().createAdvisory(
        a1,
        G,
        advisory("GO-2024-0001", {
          aliases: ["CVE-2024-1"],
          events: [
            { time: 300, type: 4, note: "", fixedVersion: "1.2.3" },
            { time: 100, type: 1, note: "seen", fixedVersion: "" },
          ],
          severities: [{ type: "CVSS_V3", score: "7.5" }],
        }),
        10,
      );
      expect(created.events.map((e) => e.time)).toEqual([100, 300]);
      expect(created.latestEventType).toBe(4);
      expect(await store().getAdvisory(a1)).toEqual(created);
      const updated = await store().updateAdvisory(
        a1,
        { events: [...created.events, { time: 400, type: 3, note: "", fixedVersion: "" }] },
        20,
      );
      expect(updated).toMatchObject({ latestEventType: 3, updateTime: 20, createTime: 10 });
      expect(updated.aliases).toEqual(["CVE-2024-1"]);
      const cleared = await store().updateAdvisory(a1, { events: [] }, 30);
      expect(cleared.latestEventType).toBe(0);
    });

    it("keeps advisory ids unique in a group, and deletes", async () => {
      await store().createAdvisory(a1, G, advisory("X-1"), 1);
      await storeError(
        () => store().createAdvisory(`${G}/00000000000000a4`, G, advisory("X-1"), 1),
        "already_exists",
      );
      await store().createAdvisory(a2, R, advisory("X-1"), 1);
      const a3 = `${G}/00000000000000a3`;
      await store().createAdvisory(a3, G, advisory("X-2"), 1);
      await storeError(
        () => store().updateAdvisory(a3, { advisoryId: "X-1" }, 2),
        "already_exists",
      );
      await store().deleteAdvisory(a3);
      // A group's advisories go with it (they are data about the group, not a child kind).
      const leaf = `${G}/00000000000000f1`;
      await store().createGroup({ uid: leaf, parentUid: G, name: "leaf", description: "", now: 1 });
      await store().createAdvisory(`${leaf}/00000000000000a9`, leaf, advisory("X-9"), 1);
      await store().deleteGroup(leaf);
      expect(await store().getAdvisory(`${leaf}/00000000000000a9`)).toBeUndefined();
      await store().deleteAdvisory(a1);
      await storeError(() => store().deleteAdvisory(a1), "not_found");
      await storeError(
        () =>
          store().createAdvisory(
            `${OTHER.replace("b", "d")}/0000000000000001`,
            OTHER.replace("b", "d"),
            advisory("Y"),
            1,
          ),
        "not_found",
      );
    });

    it("filters by alias, names, latest type and a case-insensitive query", async () => {
      await store().createAdvisory(
        a1,
        G,
        advisory("GO-2024-0001", {
          aliases: ["CVE-2024-1111", "GHSA-abcd"],
          artifactName: "registry.example/app",
          componentName: "golang.org/x/net",
          events: [{ time: 1, type: 4, note: "", fixedVersion: "0.1.0" }],
        }),
        1,
      );
      await store().createAdvisory(
        a2,
        R,
        advisory("GO-2024-0002", { componentName: "stdlib", aliases: ["CVE-2024-2222"] }),
        2,
      );
      const uids = async (filters: object, extra: object = {}) =>
        (await store().listAdvisories({ ...listQuery(extra), filters } as never)).items.map(
          (a) => a.uid,
        );
      expect(await uids({ alias: "GHSA-abcd" })).toEqual([a1]);
      expect(await uids({ alias: "ghsa-abcd" })).toEqual([]);
      expect(await uids({ componentName: "stdlib" })).toEqual([a2]);
      expect(await uids({ artifactName: "registry.example/app" })).toEqual([a1]);
      expect(await uids({ latestEventType: 4 })).toEqual([a1]);
      expect(await uids({ query: "cve-2024" })).toEqual([a1, a2]);
      expect(await uids({ query: "X/NeT" })).toEqual([a1]);
      expect(await uids({ query: "go" })).toEqual([a1, a2]);
      expect(await uids({ query: "2222" })).toEqual([a2]);
      // Never across two fields: the id ends in 0001 and the next alias starts with CVE.
      expect(await uids({ query: "0001cve" })).toEqual([]);
      expect(await uids({ query: 'a"b' })).toEqual([]);
      expect(await uids({ query: "cve", alias: "CVE-2024-2222" })).toEqual([a2]);
      expect(await uids({}, { name: "GO-2024-0002" })).toEqual([a2]);
      expect(await uids({ query: "cve" }, { scope: [G] })).toEqual([a1]);
    });

    it("imports by advisory id: created, updated, unchanged; each one all or nothing", async () => {
      const batch = [advisory("A-1", { aliases: ["CVE-1"] }), advisory("A-2")];
      expect(await store().importAdvisories(G, batch, childOf(G), 10)).toEqual([
        "created",
        "created",
      ]);
      const changed = [advisory("A-1", { aliases: ["CVE-2"] }), advisory("A-2")];
      expect(await store().importAdvisories(G, changed, childOf(G), 20)).toEqual([
        "updated",
        "unchanged",
      ]);
      const listed = await store().listAdvisories({ ...listQuery(), filters: { alias: "CVE-2" } });
      expect(listed.items.map((a) => [a.advisoryId, a.updateTime, a.createTime])).toEqual([
        ["A-1", 20, 10],
      ]);
      expect(
        (await store().listAdvisories({ ...listQuery(), filters: { alias: "CVE-1" } })).total,
      ).toBe(0);
      // A taken uid fails that advisory alone.
      const taken = () => `${G}/${next.toString(16).padStart(16, "0")}`;
      const outcomes = await store().importAdvisories(G, [advisory("A-3")], taken, 30);
      expect(outcomes[0]).toHaveProperty("rejected");
      await storeError(
        () => store().importAdvisories(`${R}/ffffffffffffffff`, batch, childOf(R), 1),
        "not_found",
      );
      expect((await store().listAdvisories(listQuery() as never)).total).toBe(2);
    });
  });
}
