/**
 * Repo.pull_reference over the API (Connect, gRPC and REST): the registry host and the name
 * the token endpoint resolves to the repo, for a repo of an organization and of a subgroup;
 * empty where that name would address another repo, and without a registry.
 */
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { protocols, registryClients } from "../helpers/registry-clients.js";
import { restCall } from "../helpers/rest-client.js";
import { runCli } from "../helpers/run-cli.js";
import {
  freePort,
  startTestServer,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

let gh: TestServer;
let plain: TestServer;
let service: string;
let org: TestOrg;
let team: string;

beforeAll(async () => {
  service = `127.0.0.1:${await freePort()}`;
  gh = await startTestServer({ GATEHOUSE_REGISTRY_AUDIENCE: service });
  plain = await startTestServer();
  org = await gh.makeOrg("acme");
  const c = registryClients(gh.url, "connect", org.owner.token);
  team = (await c.groups.createGroup({ parent: org.uid, group: { name: "team-a" } })).uid;
});
afterAll(async () => {
  await gh?.close();
  await plain?.close();
});

/** The actions a token for pull,push on `name` grants the org's owner. */
async function granted(name: string) {
  const auth = `Basic ${Buffer.from(`gatehouse:${org.owner.token}`).toString("base64")}`;
  const res = await fetch(
    `${gh.config.authUrl}/registry/token?service=${service}&scope=repository:${name}:pull,push`,
    { headers: { authorization: auth } },
  );
  expect(res.status).toBe(200);
  const access = decodeJwt(((await res.json()) as { token: string }).token).access as {
    name: string;
    actions: string[];
  }[];
  return access.find((a) => a.name === name)?.actions;
}

describe.each(protocols)("pull references over %s", (protocol) => {
  it("names a root repo and a subgroup repo as the token endpoint resolves them", async () => {
    const c = registryClients(gh.url, protocol, org.owner.token);
    const root = await c.repos.createRepo({ parent: org.uid, repo: { name: `app-${protocol}` } });
    const sub = await c.repos.createRepo({ parent: team, repo: { name: `web/${protocol}` } });
    expect(root.pullReference).toBe(`${service}/acme/app-${protocol}`);
    expect(sub.pullReference).toBe(`${service}/acme/team-a/web/${protocol}`);
    expect((await c.repos.getRepo({ uid: sub.uid })).pullReference).toBe(sub.pullReference);
    const listed = await c.repos.listRepos({ uidp: { descendantsOf: org.uid } });
    const byUid = new Map(listed.repos.map((r) => [r.uid, r.pullReference]));
    expect(byUid.get(root.uid)).toBe(root.pullReference);
    expect(byUid.get(sub.uid)).toBe(sub.pullReference);
    // The name part is exactly what the token endpoint grants on.
    for (const ref of [root.pullReference, sub.pullReference]) {
      expect(await granted(ref.slice(service.length + 1))).toEqual(["pull", "push"]);
    }
    // A rename moves the reference; the output-only field cannot be set.
    const renamed = await c.repos.updateRepo({
      repo: { uid: sub.uid, name: `moved-${protocol}`, pullReference: "evil.example/x" },
    });
    expect(renamed.pullReference).toBe(`${service}/acme/team-a/moved-${protocol}`);
  });
});

describe("pull references", () => {
  it("come back over REST as pullReference", async () => {
    const made = await restCall(
      gh.url,
      "POST",
      `/registry/v2beta1/repos/${team}`,
      { name: "rest-app" },
      org.owner.headers,
    );
    expect(made.status).toBe(200);
    expect(made.json.pullReference).toBe(`${service}/acme/team-a/rest-app`);
    const got = await restCall(
      gh.url,
      "GET",
      `/registry/v2beta1/repos/${made.json.uid}`,
      undefined,
      org.owner.headers,
    );
    expect(got.json.pullReference).toBe(made.json.pullReference);
  });

  it("are printed by the CLI", async () => {
    const env = { GATEHOUSE_API: gh.url, GATEHOUSE_TOKEN: org.owner.token };
    const made = await runCli(
      ["registry", "repos", "create", "--parent", team, "--name", "cli-app", "--output", "json"],
      env,
    );
    expect(made.code, made.stderr).toBe(0);
    const uid = (JSON.parse(made.stdout) as { uid: string }).uid;
    const got = await runCli(["registry", "repos", "get", uid, "--output", "json"], env);
    expect(JSON.parse(got.stdout).pullReference).toBe(`${service}/acme/team-a/cli-app`);
  });

  it("are empty when the name addresses another repo", async () => {
    // A younger organization of the same name: the registry name belongs to the older one.
    const twin = await gh.makeOrg("acme");
    const c = registryClients(gh.url, "connect", twin.owner.token);
    const repo = await c.repos.createRepo({ parent: twin.uid, repo: { name: "app-connect" } });
    expect(repo.pullReference).toBe("");
    // A repo of the organization named like a subgroup path shadows the subgroup's repo.
    const o = registryClients(gh.url, "connect", org.owner.token);
    const deep = await o.repos.createRepo({ parent: team, repo: { name: "shadowed" } });
    expect(deep.pullReference).toBe(`${service}/acme/team-a/shadowed`);
    await o.repos.createRepo({ parent: org.uid, repo: { name: "team-a/shadowed" } });
    expect((await o.repos.getRepo({ uid: deep.uid })).pullReference).toBe("");
  });

  it("spell the spaces of group names as '-'", async () => {
    const spaced = await gh.makeOrg("big corp");
    const c = registryClients(gh.url, "connect", spaced.owner.token);
    const dev = (await c.groups.createGroup({ parent: spaced.uid, group: { name: "dev team" } }))
      .uid;
    const repo = await c.repos.createRepo({ parent: dev, repo: { name: "app" } });
    expect(repo.pullReference).toBe(`${service}/big-corp/dev-team/app`);
    const auth = `Basic ${Buffer.from(`gatehouse:${spaced.owner.token}`).toString("base64")}`;
    const res = await fetch(
      `${gh.config.authUrl}/registry/token?service=${service}&scope=repository:big-corp/dev-team/app:pull`,
      { headers: { authorization: auth } },
    );
    const access = decodeJwt(((await res.json()) as { token: string }).token).access;
    expect(access).toEqual([
      { type: "repository", name: "big-corp/dev-team/app", actions: ["pull"] },
    ]);
  });

  it("are empty without a registry", async () => {
    const o = await plain.makeOrg("acme");
    const c = registryClients(plain.url, "grpc", o.owner.token);
    const repo = await c.repos.createRepo({ parent: o.uid, repo: { name: "app" } });
    expect(repo.pullReference).toBe("");
  });
});
