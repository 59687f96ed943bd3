import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { v1ListCap } from "../../src/services/v1/v1-list.js";
import { newChildUid } from "../../src/uid.js";
import { restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";
import { v1Client, v1Resources } from "../helpers/v1-clients.js";

let org: TestOrg;

const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("v1-many");
});

/** Create `n` groups under `parent` through the store; their uids. */
async function groupsUnder(parent: string, n: number, prefix: string): Promise<string[]> {
  const uids: string[] = [];
  for (let i = 0; i < n; i++) {
    const uid = newChildUid(parent);
    await ts.store.createGroup({
      uid,
      parentUid: parent,
      name: `${prefix}-${i}`,
      description: "",
      now: 1,
    });
    uids.push(uid);
  }
  return uids;
}

describe("a v1 List has no pages", () => {
  it("returns all of 1,000 groups in one answer, over REST and gRPC", async () => {
    const parent = newChildUid(org.uid);
    await ts.store.createGroup({
      uid: parent,
      parentUid: org.uid,
      name: "many",
      description: "",
      now: 1,
    });
    const made = await groupsUnder(parent, 1000, "g");
    const rest = await restCall(
      ts.url,
      "GET",
      `/iam/v1/groups?uidp.childrenOf=${parent}`,
      undefined,
      org.owner.headers,
    );
    expect(rest.status).toBe(200);
    expect(rest.json.items.map((g: { id: string }) => g.id).sort()).toEqual([...made].sort());
    const grpc = await v1Client("grpc", ts.url, org.owner.headers).list(v1Resources.groups, [
      ["uidp.descendants_of", parent],
    ]);
    expect(grpc.ok && grpc.json.items).toHaveLength(1000);
  });

  it(`refuses, rather than cuts short, a List of more than ${v1ListCap} items`, async () => {
    const parent = newChildUid(org.uid);
    await ts.store.createGroup({
      uid: parent,
      parentUid: org.uid,
      name: "too-many",
      description: "",
      now: 1,
    });
    await groupsUnder(parent, v1ListCap, "t");
    const atCap = await restCall(
      ts.url,
      "GET",
      `/iam/v1/groups?uidp.children_of=${parent}`,
      undefined,
      org.owner.headers,
    );
    expect(atCap.status).toBe(200);
    expect(atCap.json.items).toHaveLength(v1ListCap);
    await groupsUnder(parent, 1, "over");
    const over = await restCall(
      ts.url,
      "GET",
      `/iam/v1/groups?uidp.children_of=${parent}`,
      undefined,
      org.owner.headers,
    );
    expect(over.status).toBe(400);
    expect(over.json).toMatchObject({ code: 9 });
    expect(over.json.message).toContain(`more than ${v1ListCap} groups`);
    // A narrower filter still answers.
    const named = await restCall(
      ts.url,
      "GET",
      `/iam/v1/groups?uidp.children_of=${parent}&name=over-0`,
      undefined,
      org.owner.headers,
    );
    expect(named.json.items).toHaveLength(1);
  });
});

describe("the documented cap", () => {
  it("is the cap the server applies", () => {
    const doc = readFileSync("docs/v1-migration.md", "utf8");
    expect(doc).toContain(`**At most ${v1ListCap.toLocaleString("en-US")} items**`);
  });
});
