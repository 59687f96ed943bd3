import { beforeAll, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { maxGroupDepth, newChildUid } from "../../src/uid.js";
import { restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// Every resource of the deepest group must stay addressable: past 57 levels a created uid
// passed 1,024 characters, and could then be neither read nor deleted, nor its ancestors.

let org: TestOrg;
const chain: string[] = [];

const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("deep");
  // Groups 1 .. maxGroupDepth-1 below the organization, through the store (fast).
  let parent = org.uid;
  for (let d = 1; d < maxGroupDepth; d++) {
    const uid = newChildUid(parent);
    await ts.store.createGroup({
      uid,
      parentUid: parent,
      name: `level-${d}`,
      description: "",
      now: Date.now(),
    });
    chain.push(uid);
    parent = uid;
  }
});

const call = (method: string, path: string, body?: unknown) =>
  restCall(ts.url, method, path, body, org.owner.headers);

it(`lets groups nest ${maxGroupDepth} levels deep, and refuses one more`, async () => {
  const deepest = await call("POST", `/iam/v2beta1/groups/${chain.at(-1)}`, { name: "deepest" });
  expect(deepest.status).toBe(200);
  const tooDeep = await call("POST", `/iam/v2beta1/groups/${deepest.json.uid}`, { name: "x" });
  expect(tooDeep.status).toBe(400);
  expect(tooDeep.json.code).toBe(9);
  expect(tooDeep.json.message).toBe(
    `Precondition failed: groups nest at most ${maxGroupDepth} levels below their organization`,
  );
  chain.push(deepest.json.uid);
});

it("keeps every resource of the deepest group addressable, and its ancestors deletable", async () => {
  const group = chain.at(-1)!;
  const repo = await call("POST", `/registry/v2beta1/repos/${group}`, { name: "app" });
  expect(repo.status).toBe(200);
  const tag = await call("POST", `/registry/v2beta1/tags/${repo.json.uid}`, {
    name: "v1",
    digest: `sha256:${"a".repeat(64)}`,
  });
  expect(tag.status).toBe(200);
  const identity = await call("POST", `/iam/v2beta1/identities/${group}`, {
    name: "ci",
    claimMatch: { issuer: "https://ci.example.com", subject: "deep" },
  });
  expect(identity.status).toBe(200);
  const binding = await call("POST", `/iam/v2beta1/roleBindings/${group}`, {
    identityUid: identity.json.uid,
    roleUid: builtinRoles.find((r) => r.name === "viewer")!.uid,
  });
  expect(binding.status).toBe(200);
  for (const [path, uid] of [
    ["registry/v2beta1/tags", tag.json.uid],
    ["registry/v2beta1/repos", repo.json.uid],
    ["iam/v2beta1/identities", identity.json.uid],
  ] as const) {
    expect((await call("GET", `/${path}/${uid}`)).status, path).toBe(200);
  }
  expect((await call("GET", `/iam/v2beta1/roleBindings/${binding.json.uid}`)).status).toBe(200);
  expect((await call("DELETE", `/iam/v2beta1/roleBindings/${binding.json.uid}`)).status).toBe(200);
  for (const [path, uid] of [
    ["registry/v2beta1/tags", tag.json.uid],
    ["registry/v2beta1/repos", repo.json.uid],
    ["iam/v2beta1/identities", identity.json.uid],
  ] as const) {
    expect((await call("DELETE", `/${path}/${uid}`)).status, path).toBe(200);
  }
  for (const uid of [...chain].reverse()) {
    expect((await call("DELETE", `/iam/v2beta1/groups/${uid}`)).status).toBe(200);
  }
});
