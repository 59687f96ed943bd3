import { beforeAll, describe, expect, it } from "vitest";
import { digestOf, tick } from "../helpers/registry-clients.js";
import { badRequestFields, restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

let org: TestOrg;

const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("registry-rest");
});

/** Call the REST API as `headers` (default: the organization's owner). */
const rest = (
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = org.owner.headers,
) => restCall(ts.url, method, path, body, headers);

const repos = "/registry/v2beta1/repos";
const tags = "/registry/v2beta1/tags";

describe("repos over REST", () => {
  it("creates, gets, lists by page, updates and deletes a repo", async () => {
    const made = await rest("POST", `${repos}/${org.uid}`, {
      name: "team/app",
      description: "the app",
      aliases: ["app"],
    });
    expect(made.status).toBe(200);
    expect(made.json).toMatchObject({
      uid: expect.stringMatching(new RegExp(`^${org.uid}/[0-9a-f]{16}$`)),
      name: "team/app",
      description: "the app",
      aliases: ["app"],
    });
    const uid = made.json.uid as string;
    expect((await rest("GET", `${repos}/${uid}`)).json).toEqual(made.json);

    for (const name of ["team/b", "team/c"]) {
      expect((await rest("POST", `${repos}/${org.uid}`, { name })).status).toBe(200);
    }
    const first = await rest(
      "GET",
      `${repos}?uidp.descendantsOf=${org.uid}&pageSize=2&orderBy=name`,
    );
    expect(first.json.repos.map((r: { name: string }) => r.name)).toEqual(["team/app", "team/b"]);
    expect(first.json.totalCount).toBe("3");
    expect(first.json.nextPageToken).toEqual(expect.any(String));
    const second = await rest(
      "GET",
      `${repos}?uidp.descendantsOf=${org.uid}&pageSize=2&orderBy=name&pageToken=${encodeURIComponent(first.json.nextPageToken)}`,
    );
    expect(second.json.repos.map((r: { name: string }) => r.name)).toEqual(["team/c"]);
    expect(second.json.nextPageToken).toBeUndefined();
    const byName = await rest("GET", `${repos}?name=team/b`);
    expect(byName.json.repos.map((r: { name: string }) => r.name)).toEqual(["team/b"]);

    // Without updateMask the fields present change; the others stay.
    await tick();
    const present = await rest("PATCH", `${repos}/${uid}`, { description: "renamed" });
    expect(present.status).toBe(200);
    expect(present.json).toMatchObject({
      name: "team/app",
      description: "renamed",
      aliases: ["app"],
      createTime: made.json.createTime,
    });
    expect(present.json.updateTime).not.toBe(made.json.updateTime);
    // With updateMask only the masked fields change, even if others are sent.
    const masked = await rest("PATCH", `${repos}/${uid}?updateMask=aliases`, {
      name: "ignored",
      aliases: [],
    });
    expect(masked.json).toMatchObject({ name: "team/app", description: "renamed" });
    expect(masked.json.aliases ?? []).toEqual([]);

    expect(await rest("DELETE", `${repos}/${uid}`)).toMatchObject({ status: 200, json: {} });
    expect(await rest("GET", `${repos}/${uid}`)).toMatchObject({ status: 404, json: { code: 5 } });
  });

  it("reports each failing field in the BadRequest detail", async () => {
    const r = await rest("POST", `${repos}/${org.uid}`, {
      name: "Bad Name",
      aliases: ["ok", "ok"],
    });
    expect(r).toMatchObject({ status: 400, json: { code: 3 } });
    expect(badRequestFields(r.json)).toEqual(["name", "aliases"]);
    const patch = await rest("PATCH", `${repos}/${org.uid}/0123456789abcdef?updateMask=name`, {
      name: "",
    });
    expect(patch).toMatchObject({ status: 400, json: { code: 3 } });
    expect(badRequestFields(patch.json)).toEqual(["name"]);
  });

  it("refuses to delete a repo that still has tags", async () => {
    const repo = (await rest("POST", `${repos}/${org.uid}`, { name: "busy" })).json.uid as string;
    const tag = await rest("POST", `${tags}/${repo}`, { name: "v1", digest: digestOf("a") });
    expect(tag.status).toBe(200);
    const refused = await rest("DELETE", `${repos}/${repo}`);
    expect(refused).toMatchObject({
      status: 400,
      json: { code: 9, message: "Precondition failed: cannot delete repo with child tags" },
    });
    expect((await rest("GET", `${repos}/${repo}`)).status).toBe(200);
    expect((await rest("DELETE", `${tags}/${tag.json.uid}`)).status).toBe(200);
    expect((await rest("DELETE", `${repos}/${repo}`)).status).toBe(200);
  });
});

describe("tags over REST", () => {
  let repo: string;
  beforeAll(async () => {
    repo = (await rest("POST", `${repos}/${org.uid}`, { name: "tagged" })).json.uid;
  });

  it("creates, moves, lists by page and filter, and deletes tags", async () => {
    const first = await rest("POST", `${tags}/${repo}`, { name: "latest", digest: digestOf("1") });
    expect(first.status).toBe(200);
    expect(first.json).toMatchObject({ name: "latest", digest: digestOf("1") });
    expect(first.json.uid).toMatch(new RegExp(`^${repo}/[0-9a-f]{16}$`));
    await tick();
    // POSTing an existing name moves the tag: same uid and createTime, new digest.
    const moved = await rest("POST", `${tags}/${repo}`, {
      name: "latest",
      digest: digestOf("2"),
      deprecated: true,
    });
    expect(moved.json).toMatchObject({
      uid: first.json.uid,
      digest: digestOf("2"),
      deprecated: true,
      createTime: first.json.createTime,
    });
    expect(moved.json.updateTime).not.toBe(first.json.updateTime);
    expect((await rest("GET", `${tags}/${first.json.uid}`)).json).toEqual(moved.json);

    const referrer = `sha256-${"3".repeat(64)}`;
    for (const name of ["v1", referrer]) {
      expect((await rest("POST", `${tags}/${repo}`, { name, digest: digestOf("3") })).status).toBe(
        200,
      );
    }
    const within = `uidp.childrenOf=${repo}&orderBy=name`;
    const all = await rest("GET", `${tags}?${within}`);
    expect(all.json.totalCount).toBe("3");
    const plain = await rest("GET", `${tags}?${within}&excludeReferrers=true`);
    expect(plain.json.tags.map((t: { name: string }) => t.name)).toEqual(["latest", "v1"]);
    expect(plain.json.totalCount).toBe("2");
    const page1 = await rest("GET", `${tags}?${within}&excludeReferrers=true&pageSize=1`);
    expect(page1.json.tags.map((t: { name: string }) => t.name)).toEqual(["latest"]);
    const page2 = await rest(
      "GET",
      `${tags}?${within}&excludeReferrers=true&pageSize=1&pageToken=${encodeURIComponent(page1.json.nextPageToken)}`,
    );
    expect(page2.json.tags.map((t: { name: string }) => t.name)).toEqual(["v1"]);
    expect(page2.json.nextPageToken).toBeUndefined();
    const byDigest = await rest("GET", `${tags}?${within}&digest=${digestOf("3")}`);
    expect(byDigest.json.totalCount).toBe("2");

    expect(await rest("DELETE", `${tags}/${first.json.uid}`)).toMatchObject({
      status: 200,
      json: {},
    });
    expect((await rest("GET", `${tags}/${first.json.uid}`)).status).toBe(404);
  });

  it("reports each failing field in the BadRequest detail", async () => {
    const r = await rest("POST", `${tags}/${repo}`, { name: ".bad", digest: "sha256:XYZ" });
    expect(r).toMatchObject({ status: 400, json: { code: 3 } });
    expect(badRequestFields(r.json)).toEqual(["name", "digest"]);
  });

  it("lets a registry.pull identity read but not write", async () => {
    const tag = await rest("POST", `${tags}/${repo}`, { name: "pull", digest: digestOf("4") });
    const puller = await ts.makeIdentity(org.uid, ["registry.pull"]);
    const as = puller.headers;
    expect((await rest("GET", `${repos}/${repo}`, undefined, as)).status).toBe(200);
    expect((await rest("GET", `${tags}/${tag.json.uid}`, undefined, as)).status).toBe(200);
    const listed = await rest("GET", `${tags}?uidp.childrenOf=${repo}&name=pull`, undefined, as);
    expect(listed.json.tags).toEqual([tag.json]);
    const denied = [
      rest("POST", `${tags}/${repo}`, { name: "pushed", digest: digestOf("5") }, as),
      rest("POST", `${repos}/${org.uid}`, { name: "mine" }, as),
    ];
    for (const r of await Promise.all(denied)) {
      expect(r).toMatchObject({ status: 403, json: { code: 7 } });
    }
    expect((await rest("DELETE", `${tags}/${tag.json.uid}`, undefined, as)).status).toBe(403);
  });
});
