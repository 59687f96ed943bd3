import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  digestOf,
  failure,
  protocols,
  type RegistryClients,
  registryClients,
} from "../helpers/registry-clients.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let ts: TestServer;
beforeAll(async () => {
  ts = await startTestServer();
});
afterAll(async () => {
  await ts?.close();
});

describe.each(protocols)("repos over %s", (protocol) => {
  let c: RegistryClients;
  let org: string;
  beforeAll(async () => {
    c = registryClients(ts.url, protocol);
    org = (await c.groups.createGroup({ parent: "", group: { name: "acme" } })).uid;
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

    await c.repos.createRepo({ parent: team, repo: { name: "web" } });
    const listed = await c.repos.listRepos({ uidp: { childrenOf: team }, orderBy: "name" });
    expect(listed.repos.map((r) => r.name)).toEqual(["team/app2", "web"]);
    expect(listed.totalCount).toBe(2n);
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
    const missing = `${"f".repeat(40)}`;
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
});
