import { beforeAll, expect, it } from "vitest";
import { iamClients, transportFor } from "../helpers/iam-clients.js";
import { restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// A mask path names exactly what changes, at any depth; without a mask the fields present in
// the body (over REST its keys, over gRPC and Connect the populated fields) do, at any depth.

let org: TestOrg;
const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("nested");
});

const rest = (method: string, path: string, body?: unknown) =>
  restCall(ts.url, method, path, body, org.owner.headers);

async function workload() {
  const made = await rest("POST", `/iam/v2beta1/identities/${org.uid}`, {
    name: "ci",
    claimMatch: { issuer: "https://ci.example.com", subject: "repo:a", claims: { ref: "main" } },
  });
  expect(made.status).toBe(200);
  return made.json.uid as string;
}

it("REST without a mask: a nested key changes that sub-field alone", async () => {
  const uid = await workload();
  const res = await rest("PATCH", `/iam/v2beta1/identities/${uid}`, {
    claimMatch: { subject: "repo:b" },
  });
  expect(res.status, JSON.stringify(res.json)).toBe(200);
  expect(res.json.claimMatch).toMatchObject({
    issuer: "https://ci.example.com",
    subject: "repo:b",
    claims: { ref: "main" },
  });
});

it("REST with updateMask=claimMatch.subject: only the subject changes, whatever else is sent", async () => {
  const uid = await workload();
  const res = await rest("PATCH", `/iam/v2beta1/identities/${uid}?updateMask=claimMatch.subject`, {
    claimMatch: { subject: "repo:c", issuer: "https://evil.example.com" },
  });
  expect(res.status, JSON.stringify(res.json)).toBe(200);
  expect(res.json.claimMatch).toMatchObject({
    issuer: "https://ci.example.com",
    subject: "repo:c",
  });
});

it("REST with the whole field in the mask replaces it whole", async () => {
  const uid = await workload();
  const res = await rest("PATCH", `/iam/v2beta1/identities/${uid}?updateMask=claimMatch`, {
    claimMatch: { issuer: "https://other.example.com", subject: "repo:d" },
  });
  expect(res.status).toBe(200);
  expect(res.json.claimMatch.claims ?? {}).toEqual({});
  expect(res.json.claimMatch.issuer).toBe("https://other.example.com");
});

it("refuses an unknown nested path", async () => {
  const uid = await workload();
  const res = await rest("PATCH", `/iam/v2beta1/identities/${uid}?updateMask=claimMatch.color`, {
    claimMatch: { subject: "x" },
  });
  expect(res.status).toBe(400);
  expect(res.json.message).toMatch(/claim_match\.color|claimMatch\.color/);
});

it("Connect without a mask: the populated sub-fields change alone", async () => {
  const uid = await workload();
  const c = iamClients(transportFor("connect", ts.url, org.owner.headers));
  const updated = await c.identities.updateIdentity({
    identity: { uid, method: { case: "claimMatch", value: { subject: "repo:e" } } },
  });
  expect(updated.method.case).toBe("claimMatch");
  expect(updated.method.value).toMatchObject({
    issuer: "https://ci.example.com",
    subject: "repo:e",
    claims: { ref: "main" },
  });
});

it("an account association's provider block changes in part too", async () => {
  const group = (await rest("POST", `/iam/v2beta1/groups/${org.uid}`, { name: "accounts" })).json
    .uid as string;
  const made = await rest("POST", `/iam/v2beta1/accountAssociations/${group}`, {
    name: "cloud",
    google: { projectId: "acme-prod", projectNumber: "1234567890" },
  });
  expect(made.status).toBe(200);
  const res = await rest("PATCH", `/iam/v2beta1/accountAssociations/${group}`, {
    google: { projectId: "acme-next" },
  });
  expect(res.status, JSON.stringify(res.json)).toBe(200);
  expect(res.json.google).toEqual({ projectId: "acme-next", projectNumber: "1234567890" });
});
