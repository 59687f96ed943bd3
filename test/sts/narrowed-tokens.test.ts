import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { newChildUid } from "../../src/uid.js";
import {
  apiError,
  connectGroups,
  connectTransports,
  type GroupsApi,
  grpcJsGroups,
  restGroups,
} from "../helpers/groups-clients.js";
import { restCall } from "../helpers/rest-client.js";
import { runBin } from "../helpers/run-bin.js";
import { startTestServer, type TestOrg, type TestServer } from "../helpers/test-server.js";

// Narrowed tokens (STS `cap` and `group`): a token minted from a person's API token carries a
// subset of its capabilities and a subtree, and every check on every protocol intersects with
// them. Each refusal is paired with the same call by the person's own token succeeding, so the
// narrowing, not a missing grant, is what refuses. (The groups API reads with groups.list:
// there is no groups.get.)

let gh: TestServer;
let org: TestOrg;
let a: string; // org/a: the narrowed tokens' group
let a1: string; // org/a/a1
let b: string; // org/b: beside a
const viewer = builtinRoles.find((r) => r.name === "viewer")!.uid;

/** GET /sts/exchange with `bearer`, asking for `params` (cap repeatable). */
async function exchange(bearer: string, params: [string, string][]) {
  const q = new URLSearchParams([["aud", gh.config.baseUrl], ...params]);
  return restCall(gh.url, "GET", `/sts/exchange?${q}`, undefined, {
    authorization: `Bearer ${bearer}`,
  });
}

async function narrowed(bearer: string, params: [string, string][]): Promise<string> {
  const answer = await exchange(bearer, params);
  expect(answer.status, JSON.stringify(answer.json)).toBe(200);
  return answer.json.token as string;
}

beforeAll(async () => {
  gh = await startTestServer();
  org = await gh.makeOrg("narrow-org");
  const make = async (parent: string, name: string) =>
    (
      await gh.store.createGroup({
        uid: newChildUid(parent),
        parentUid: parent,
        name,
        description: "",
        now: Date.now(),
      })
    ).uid;
  a = await make(org.uid, "a");
  a1 = await make(a, "a1");
  b = await make(org.uid, "b");
});

afterAll(async () => {
  await gh?.close();
});

const protocolApis: [string, (headers: Record<string, string>) => GroupsApi][] = [
  ["REST", (h) => restGroups(gh.url, h)],
  ["Connect", (h) => connectGroups(connectTransports(gh.url, h).connect)],
  ["gRPC-Web", (h) => connectGroups(connectTransports(gh.url, h).grpcWeb)],
  ["gRPC (grpc-js)", (h) => grpcJsGroups(gh.port, h)],
];

describe.each(protocolApis)("a token narrowed to reading group a, over %s", (_name, apiOf) => {
  let full: GroupsApi;
  let narrow: GroupsApi;

  beforeAll(async () => {
    const token = await narrowed(org.owner.token, [
      ["cap", "groups.list"],
      ["group", a],
    ]);
    full = apiOf(org.owner.headers);
    narrow = apiOf({ authorization: `Bearer ${token}` });
  });

  afterAll(() => {
    for (const api of [full, narrow]) (api as { close?: () => void }).close?.();
  });

  it("reads within its group", async () => {
    expect((await narrow.get(a)).name).toBe("a");
    expect((await narrow.get(a1)).name).toBe("a1");
  });

  it("reads nothing outside its group, where the person's own token reads", async () => {
    for (const uid of [org.uid, b]) {
      expect((await full.get(uid)).uid).toBe(uid);
      expect((await apiError(() => narrow.get(uid))).code).toBe(Code.PermissionDenied);
    }
  });

  it("lists only its group's subtree", async () => {
    const all = (await full.list({ descendantsOf: org.uid })).groups.map((g) => g.uid);
    expect(all).toEqual(expect.arrayContaining([a, a1, b]));
    const some = (await narrow.list({ descendantsOf: org.uid })).groups.map((g) => g.uid);
    expect(some).toContain(a1);
    expect(some).not.toContain(b);
    expect(some.every((uid) => uid === a || uid.startsWith(`${a}/`))).toBe(true);
  });

  it("writes nothing: the capabilities it was narrowed away from", async () => {
    const made = await full.create(a, { name: "made-by-owner" });
    await full.delete(made.uid);
    expect((await apiError(() => narrow.create(a, { name: "x" }))).code).toBe(
      Code.PermissionDenied,
    );
    expect(
      (await apiError(() => narrow.update({ uid: a1, description: "x" }, ["description"]))).code,
    ).toBe(Code.PermissionDenied);
    expect((await apiError(() => narrow.delete(a1))).code).toBe(Code.PermissionDenied);
  });
});

describe("narrowing never widens", () => {
  it("refuses a capability the identity does not hold, naming it", async () => {
    // The owner role has every capability but the advisory writes.
    const answer = await exchange(org.owner.token, [["cap", "advisories.create"]]);
    expect(answer.status).toBe(403);
    expect(answer.json.message).toContain("does not hold advisories.create");
  });

  it("refuses a group where the identity holds nothing", async () => {
    const other = await gh.makeOrg("someone-else");
    const answer = await exchange(org.owner.token, [["group", other.uid]]);
    expect(answer.status).toBe(403);
    expect(answer.json.message).toContain("holds nothing");
  });

  it("refuses what is not a capability or not a uid, as a bad argument", async () => {
    const cap = await exchange(org.owner.token, [["cap", "groups.fly"]]);
    expect(cap.status).toBe(400);
    expect(cap.json.message).toContain("not a capability");
    const group = await exchange(org.owner.token, [["group", "not a uid"]]);
    expect(group.status).toBe(400);
  });

  it("narrows a narrowed token further, never back out", async () => {
    const first = await narrowed(org.owner.token, [
      ["cap", "groups.list"],
      ["group", a],
    ]);
    // Deeper: fine.
    const deeper = await narrowed(first, [["group", a1]]);
    expect(
      (
        await restCall(gh.url, "GET", `/iam/v2beta1/groups/${a1}`, undefined, {
          authorization: `Bearer ${deeper}`,
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await restCall(gh.url, "GET", `/iam/v2beta1/groups/${a}`, undefined, {
          authorization: `Bearer ${deeper}`,
        })
      ).status,
    ).toBe(403);
    // Wider group, or a capability it was narrowed away from: refused.
    const wider = await exchange(first, [["group", org.uid]]);
    expect(wider.status).toBe(403);
    expect(wider.json.message).toContain("outside the presented token's group");
    const more = await exchange(first, [["cap", "groups.create"]]);
    expect(more.status).toBe(403);
    // Without narrowing, an API token is no bearer for an exchange (nothing to re-issue).
    expect((await exchange(first, [])).status).toBe(401);
  });

  it("grants nothing beyond the narrowing: a role binding needs the role's capabilities in it", async () => {
    const person = await gh.makeIdentity(a);
    const binder = await narrowed(org.owner.token, [
      ["cap", "role_bindings.create"],
      ["group", a],
    ]);
    const bind = (token: string) =>
      restCall(
        gh.url,
        "POST",
        `/iam/v2beta1/roleBindings/${a}`,
        { identityUid: person.uid, roleUid: viewer },
        { authorization: `Bearer ${token}` },
      );
    const refused = await bind(binder);
    expect(refused.status, JSON.stringify(refused.json)).toBe(403);
    expect((await bind(org.owner.token)).status).toBe(200);
  });

  it("creates no organization, and redeems no invite", async () => {
    const token = await narrowed(org.owner.token, [["group", a]]);
    const created = await restCall(
      gh.url,
      "POST",
      "/iam/v2beta1/groups",
      { name: "new-org" },
      {
        authorization: `Bearer ${token}`,
      },
    );
    expect(created.status).toBe(403);
    const redeemed = await restCall(
      gh.url,
      "POST",
      "/iam/v2beta1/groupInvites:redeem",
      { code: "x" },
      {
        authorization: `Bearer ${token}`,
      },
    );
    expect(redeemed.status).toBe(403);
  });

  it("the caller's capabilities are the narrowed ones", async () => {
    const token = await narrowed(org.owner.token, [
      ["cap", "groups.list"],
      ["cap", "identities.list"],
    ]);
    const caps = await restCall(
      gh.url,
      "GET",
      `/iam/v2beta1/access:capabilities?groupUid=${encodeURIComponent(a)}`,
      undefined,
      { authorization: `Bearer ${token}` },
    );
    expect(caps.status, JSON.stringify(caps.json)).toBe(200);
    expect(caps.json.capabilities).toEqual(["groups.list", "identities.list"]);
  });
});

describe("gatehouse auth token --capabilities --group", () => {
  it("prints a token narrowed to them, from the login's token", async () => {
    const env = { GATEHOUSE_API: gh.url, GATEHOUSE_TOKEN: org.owner.token };
    const run = await runBin(
      ["auth", "token", "--capabilities", "groups.list,identities.list", "--group", a],
      env,
    );
    expect(run.code, run.stderr).toBe(0);
    const token = run.stdout.trim();
    const headers = { authorization: `Bearer ${token}` };
    expect(
      (await restCall(gh.url, "GET", `/iam/v2beta1/groups/${a1}`, undefined, headers)).status,
    ).toBe(200);
    expect(
      (await restCall(gh.url, "GET", `/iam/v2beta1/groups/${b}`, undefined, headers)).status,
    ).toBe(403);
    const refused = await runBin(["auth", "token", "--capabilities", "advisories.create"], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("does not hold advisories.create");
  });
});
