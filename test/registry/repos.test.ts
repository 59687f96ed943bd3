import { beforeAll, describe, expect, it } from "vitest";
import {
  digestOf,
  failure,
  protocols,
  type RegistryClients,
  registryClients,
} from "../helpers/registry-clients.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();

describe.each(protocols)("repos over %s", (protocol) => {
  let c: RegistryClients;
  let org: string;
  beforeAll(async () => {
    const acme = await ts.makeOrg("acme");
    org = acme.uid;
    c = registryClients(ts.url, protocol, acme.owner.token);
  });

  it("creates, reads, updates and lists repos", async () => {
    const team = (await c.groups.createGroup({ parent: org, group: { name: `t-${protocol}` } }))
      .uid;
    const repo = await c.repos.createRepo({
      parent: team,
      repo: { name: "team/app", description: "the app", aliases: ["app"] },
    });
    expect(repo.uid).toMatch(new RegExp(`^${team}/[0-9a-f]{16}$`));
    expect(repo).toMatchObject({ name: "team/app", description: "the app", aliases: ["app"] });
    expect(await c.repos.getRepo({ uid: repo.uid })).toEqual(repo);

    const changed = await c.repos.updateRepo({ repo: { uid: repo.uid, description: "new" } });
    expect(changed).toMatchObject({ name: "team/app", description: "new", aliases: ["app"] });
    const masked = await c.repos.updateRepo({
      repo: { uid: repo.uid, name: "team/app2", description: "ignored" },
      updateMask: { paths: ["name", "aliases"] },
    });
    expect(masked).toMatchObject({ name: "team/app2", description: "new", aliases: [] });
    // public: false by default, set alone by a mask, kept by other updates.
    expect(masked.public).toBe(false);
    const opened = await c.repos.updateRepo({
      repo: { uid: repo.uid, public: true, description: "ignored" },
      updateMask: { paths: ["public"] },
    });
    expect(opened).toMatchObject({ public: true, description: "new" });
    expect((await c.repos.updateRepo({ repo: { uid: repo.uid, description: "d" } })).public).toBe(
      true,
    );
    const closed = await c.repos.updateRepo({
      repo: { uid: repo.uid, public: false },
      updateMask: { paths: ["public"] },
    });
    expect(closed.public).toBe(false);
    expect(
      (await c.repos.createRepo({ parent: team, repo: { name: "pub", public: true } })).public,
    ).toBe(true);

    await c.repos.createRepo({ parent: team, repo: { name: "web" } });
    const listed = await c.repos.listRepos({ uidp: { childrenOf: team }, orderBy: "name" });
    expect(listed.repos.map((r) => r.name)).toEqual(["pub", "team/app2", "web"]);
    expect(listed.totalCount).toBe(3n);
    const byName = await c.repos.listRepos({ uidp: { descendantsOf: org }, name: "web" });
    expect(byName.repos.map((r) => r.uid)).toHaveLength(1);
  });

  it.each([
    ["Upper", ["name"]],
    ["a//b", ["name"]],
    ["-lead", ["name"]],
    ["trail.", ["name"]],
    ["a..b", ["name"]],
    ["", ["name"]],
  ])("rejects the repo name %j", async (name, fields) => {
    const err = await failure(c.repos.createRepo({ parent: org, repo: { name } }));
    expect(err).toMatchObject({ code: 3, fields });
  });

  it("accepts OCI names with separators and path components", async () => {
    for (const name of ["a", "a.b_c__d---e", "library/nginx", "x/y/z-1"]) {
      await c.repos.createRepo({ parent: org, repo: { name: `${protocol}-${name}` } });
    }
    const err = await failure(
      c.repos.createRepo({ parent: org, repo: { name: "ok", aliases: ["Bad", "ok", "ok"] } }),
    );
    expect(err.fields).toEqual(["aliases", "aliases[0]"]);
  });

  it("refuses a second repo of the same name in a group, and a missing group", async () => {
    await c.repos.createRepo({ parent: org, repo: { name: `dup-${protocol}` } });
    expect(
      (await failure(c.repos.createRepo({ parent: org, repo: { name: `dup-${protocol}` } }))).code,
    ).toBe(6);
    const missing = `${org}/ffffffffffffffff`;
    expect((await failure(c.repos.createRepo({ parent: missing, repo: { name: "x" } }))).code).toBe(
      5,
    );
    expect((await failure(c.repos.getRepo({ uid: `${org}/0000000000000000` }))).code).toBe(5);
  });

  it("refuses to delete a group with repos and a repo with tags", async () => {
    const group = (await c.groups.createGroup({ parent: org, group: { name: `d-${protocol}` } }))
      .uid;
    const repo = await c.repos.createRepo({ parent: group, repo: { name: "app" } });
    const tag = await c.tags.createTag({
      parent: repo.uid,
      tag: { name: "v1", digest: digestOf("1") },
    });
    expect(await failure(c.groups.deleteGroup({ uid: group }))).toEqual({
      code: 9,
      message: "Precondition failed: cannot delete group with child repos",
      fields: [],
      preconditions: ["RESOURCE_NOT_EMPTY"],
    });
    expect(await failure(c.repos.deleteRepo({ uid: repo.uid }))).toEqual({
      code: 9,
      message: "Precondition failed: cannot delete repo with child tags",
      fields: [],
      preconditions: ["RESOURCE_NOT_EMPTY"],
    });
    await c.tags.deleteTag({ uid: tag.uid });
    await c.repos.deleteRepo({ uid: repo.uid });
    await c.groups.deleteGroup({ uid: group });
    expect((await failure(c.repos.getRepo({ uid: repo.uid }))).code).toBe(5);
  });

  it("lets a registry.pull identity read repos and tags but not write them", async () => {
    const repo = await c.repos.createRepo({ parent: org, repo: { name: `pull-${protocol}` } });
    await c.tags.createTag({ parent: repo.uid, tag: { name: "v1", digest: digestOf("1") } });
    const puller = await ts.makeIdentity(org, ["registry.pull"]);
    const p = registryClients(ts.url, protocol, puller.token);
    expect(await p.repos.getRepo({ uid: repo.uid })).toEqual(repo);
    const tags = await p.tags.listTags({ uidp: { childrenOf: repo.uid } });
    expect(tags.tags.map((t) => t.name)).toEqual(["v1"]);
    for (const call of [
      p.repos.createRepo({ parent: org, repo: { name: "nope" } }),
      p.repos.updateRepo({ repo: { uid: repo.uid, description: "x" } }),
      p.repos.deleteRepo({ uid: repo.uid }),
      p.tags.createTag({ parent: repo.uid, tag: { name: "v2", digest: digestOf("2") } }),
      p.tags.deleteTag({ uid: tags.tags[0]!.uid }),
    ]) {
      expect((await failure(call)).code).toBe(7);
    }
    // Without advisories.list anywhere, the list is empty.
    expect((await p.advisories.listAdvisories({})).totalCount).toBe(0n);
  });

  it("shows another organization nothing and lets it change nothing", async () => {
    const repo = await c.repos.createRepo({ parent: org, repo: { name: `own-${protocol}` } });
    const other = await ts.makeOrg("other");
    const o = registryClients(ts.url, protocol, other.owner.token);
    expect((await failure(o.repos.getRepo({ uid: repo.uid }))).code).toBe(7);
    expect((await failure(o.repos.deleteRepo({ uid: repo.uid }))).code).toBe(7);
    expect((await failure(o.repos.createRepo({ parent: org, repo: { name: "x" } }))).code).toBe(7);
    const listed = await o.repos.listRepos({ uidp: { descendantsOf: org } });
    expect(listed).toMatchObject({ repos: [], totalCount: 0n });
    const none = registryClients(ts.url, protocol);
    expect((await failure(none.repos.listRepos({}))).code).toBe(16);
  });
});
