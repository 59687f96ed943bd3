import { beforeAll, expect, it } from "vitest";
import { builtinRoles } from "../../src/auth/capabilities.js";
import { type Json, restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// An empty PATCH changes nothing, updateTime included.

let org: TestOrg;
const clock = { t: Date.now() };
const ts = useTestServer({}, { now: () => clock.t });
beforeAll(async () => {
  org = await ts.makeOrg("patching");
});

const viewer = builtinRoles.find((r) => r.name === "viewer")!.uid;
const call = async (method: string, path: string, body?: unknown): Promise<Json> => {
  const r = await restCall(ts.url, method, path, body, org.owner.headers);
  expect(r.status, `${method} ${path}: ${JSON.stringify(r.json)}`).toBe(200);
  return r.json;
};

it.each([
  ["groups", "iam/v2beta1", { name: "g" }],
  [
    "identities",
    "iam/v2beta1",
    { name: "i", claimMatch: { issuer: "https://ci.test", subject: "s" } },
  ],
  ["roles", "iam/v2beta1", { name: "r", capabilities: ["groups.list"] }],
  [
    "identityProviders",
    "iam/v2beta1",
    { name: "p", oidc: { issuer: "https://l.test", clientId: "c" } },
  ],
  ["accountAssociations", "iam/v2beta1", { name: "a", amazon: { account: "123456789012" } }],
  ["groupInvites", "iam/v2beta1", { roleUid: viewer }],
  ["repos", "registry/v2beta1", { name: "app" }],
])("%s: PATCH {} and PATCH with no body change nothing", async (collection, prefix, body) => {
  const parent = (
    await call("POST", `/iam/v2beta1/groups/${org.uid}`, { name: `p-${collection.toLowerCase()}` })
  ).uid;
  const made = await call("POST", `/${prefix}/${collection}/${parent}`, body);
  const before = await call("GET", `/${prefix}/${collection}/${made.uid}`);
  clock.t += 60_000;
  const patched = await call("PATCH", `/${prefix}/${collection}/${made.uid}`, {});
  expect(patched).toEqual(before);
  const bare = await call("PATCH", `/${prefix}/${collection}/${made.uid}`);
  expect(bare).toEqual(before);
  expect(await call("GET", `/${prefix}/${collection}/${made.uid}`)).toEqual(before);
});
