import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { badRequestFields, restCall } from "../helpers/rest-client.js";
import {
  startTestServer,
  type TestCaller,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";

// Page tokens are signed and bound to the caller and the filters: an altered, cut, foreign or
// borrowed token is INVALID_ARGUMENT and never shows anyone else's data.

let ts: TestServer;
let other: TestServer;
let org: TestOrg;
let rival: TestOrg;
let viewer: TestCaller;

beforeAll(async () => {
  [ts, other] = await Promise.all([startTestServer(), startTestServer()]);
  [org, rival] = await Promise.all([ts.makeOrg("tamper"), ts.makeOrg("rival")]);
  viewer = await ts.makeIdentity(org.uid, ["viewer"]);
  for (const o of [org, rival]) {
    for (let i = 0; i < 5; i++) {
      const r = await restCall(
        ts.url,
        "POST",
        `/iam/v2beta1/groups/${o.uid}`,
        { name: `g${i}` },
        o.owner.headers,
      );
      expect(r.status).toBe(200);
    }
  }
});
afterAll(async () => {
  await Promise.all([ts?.close(), other?.close()]);
});

const listPath = (orgUid: string, token = "", orderBy = "") =>
  `/iam/v2beta1/groups?uidp.descendantsOf=${orgUid}&pageSize=2` +
  `&pageToken=${encodeURIComponent(token)}&orderBy=${encodeURIComponent(orderBy)}`;

/** The first page's token of `caller`'s listing of `orgUid` on `server`. */
async function firstToken(caller: TestCaller, orgUid: string, server = ts): Promise<string> {
  const r = await restCall(server.url, "GET", listPath(orgUid), undefined, caller.headers);
  expect(r.status).toBe(200);
  expect(r.json.nextPageToken).toMatch(/^[\w-]{40,}$/);
  return r.json.nextPageToken as string;
}

const expectBadToken = (r: { status: number; json: { code: number } }) => {
  expect(r.status).toBe(400);
  expect(r.json.code).toBe(3);
  expect(badRequestFields(r.json)).toEqual(["page_token"]);
};

describe("page token tampering", () => {
  it("follows an untouched token", async () => {
    const token = await firstToken(org.owner, org.uid);
    const r = await restCall(ts.url, "GET", listPath(org.uid, token), undefined, org.owner.headers);
    expect(r.status).toBe(200);
    expect(r.json.groups).toHaveLength(2);
  });

  it("refuses any altered, truncated or extended token", async () => {
    const token = await firstToken(org.owner, org.uid);
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/%. ";
    const char = fc.constantFrom(...alphabet);
    const mutation = fc.oneof(
      fc
        .tuple(fc.nat(token.length - 1), char)
        .map(([i, c]) => token.slice(0, i) + c + token.slice(i + 1)),
      fc.nat(token.length - 1).map((i) => token.slice(0, i)),
      fc.nat(token.length - 1).map((i) => token.slice(i + 1)),
      fc.string({ unit: char, minLength: 1, maxLength: 8 }).map((s) => token + s),
      fc
        .tuple(fc.nat(token.length), fc.string({ unit: char, minLength: 1, maxLength: 4 }))
        .map(([i, s]) => token.slice(0, i) + s + token.slice(i)),
    );
    await fc.assert(
      fc.asyncProperty(mutation, async (bad) => {
        fc.pre(bad !== token && bad !== "");
        const r = await restCall(
          ts.url,
          "GET",
          listPath(org.uid, bad),
          undefined,
          org.owner.headers,
        );
        expectBadToken(r);
      }),
      { numRuns: 150 },
    );
  });

  it("refuses a token another server (another key) signed", async () => {
    const foreignOrg = await other.makeOrg("elsewhere");
    for (const name of ["a", "b", "c"]) {
      const path = `/iam/v2beta1/groups/${foreignOrg.uid}`;
      await restCall(other.url, "POST", path, { name }, foreignOrg.owner.headers);
    }
    const foreign = await firstToken(foreignOrg.owner, foreignOrg.uid, other);
    expectBadToken(
      await restCall(ts.url, "GET", listPath(org.uid, foreign), undefined, org.owner.headers),
    );
  });

  it("refuses a token for another order or other filters", async () => {
    const token = await firstToken(org.owner, org.uid);
    expectBadToken(
      await restCall(ts.url, "GET", listPath(org.uid, token, "name"), undefined, org.owner.headers),
    );
    expectBadToken(
      await restCall(
        ts.url,
        "GET",
        `${listPath(org.uid, token)}&name=g1`,
        undefined,
        org.owner.headers,
      ),
    );
  });

  it("reveals nothing to another caller who reuses a token", async () => {
    const token = await firstToken(org.owner, org.uid);
    // Another organization's owner: on the first organization's listing, and on their own.
    const theirs = await restCall(
      ts.url,
      "GET",
      listPath(org.uid, token),
      undefined,
      rival.owner.headers,
    );
    expect([400, 403]).toContain(theirs.status);
    expect(JSON.stringify(theirs.json)).not.toContain(org.uid);
    expectBadToken(
      await restCall(ts.url, "GET", listPath(rival.uid, token), undefined, rival.owner.headers),
    );
    // A viewer of the same organization: the token is bound to the caller who listed.
    expectBadToken(
      await restCall(ts.url, "GET", listPath(org.uid, token), undefined, viewer.headers),
    );
  });

  it("is refused the same way over Connect", async () => {
    const token = await firstToken(org.owner, org.uid);
    const res = await fetch(`${ts.url}/gatehouse.iam.v2beta1.GroupsService/ListGroups`, {
      method: "POST",
      headers: { ...rival.owner.headers, "content-type": "application/json" },
      body: JSON.stringify({ uidp: { descendantsOf: rival.uid }, pageSize: 2, pageToken: token }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe("invalid_argument");
  });
});
