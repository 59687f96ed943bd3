import { beforeAll, describe, expect, it } from "vitest";
import { tick } from "../helpers/registry-clients.js";
import { badRequestFields, restCall } from "../helpers/rest-client.js";
import { type TestCaller, type TestOrg, useTestServer } from "../helpers/test-server.js";

let org: TestOrg;
// The owner role excludes advisory writes: an advisories.admin identity writes them.
let admin: TestCaller;

const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("advisories-rest");
  admin = await ts.makeIdentity(org.uid, ["advisories.admin"]);
});

/** Call the REST API as `headers` (default: the advisories.admin identity). */
const rest = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  restCall(ts.url, method, path, body, headers ?? admin.headers);

const advisories = "/vulnerabilities/v2beta1/advisories";
const names = (json: { advisories: { advisoryId: string }[] }) =>
  json.advisories.map((a) => a.advisoryId);

describe("advisories over REST", () => {
  it("creates, gets, lists by page and query, updates and deletes an advisory", async () => {
    const made = await rest("POST", `${advisories}/${org.uid}`, {
      advisoryId: "GO-2024-0001",
      aliases: ["CVE-2024-1234"],
      summary: "bad things",
      artifactName: "app",
      componentName: "stdlib",
      componentType: "golang",
      severities: [{ type: "CVSS_V3", score: "7.5" }],
      events: [{ time: "2024-01-02T03:04:05.000Z", type: "DETECTED" }],
    });
    expect(made.status).toBe(200);
    expect(made.json).toMatchObject({
      uid: expect.stringMatching(new RegExp(`^${org.uid}/[0-9a-f]{16}$`)),
      advisoryId: "GO-2024-0001",
      aliases: ["CVE-2024-1234"],
      severities: [{ type: "CVSS_V3", score: "7.5" }],
      events: [{ time: "2024-01-02T03:04:05.000Z", type: "DETECTED" }],
      latestEventType: "DETECTED",
    });
    const uid = made.json.uid as string;
    expect((await rest("GET", `${advisories}/${uid}`)).json).toEqual(made.json);

    for (const advisoryId of ["GO-2024-0002", "GHSA-xxxx-yyyy-zzzz"]) {
      const r = await rest("POST", `${advisories}/${org.uid}`, { advisoryId, artifactName: "lib" });
      expect(r.status).toBe(200);
    }
    const within = `uidp.descendantsOf=${org.uid}&orderBy=name`;
    const first = await rest("GET", `${advisories}?${within}&pageSize=2`);
    expect(names(first.json)).toEqual(["GHSA-xxxx-yyyy-zzzz", "GO-2024-0001"]);
    expect(first.json.totalCount).toBe("3");
    const second = await rest(
      "GET",
      `${advisories}?${within}&pageSize=2&pageToken=${encodeURIComponent(first.json.nextPageToken)}`,
    );
    expect(names(second.json)).toEqual(["GO-2024-0002"]);
    expect(second.json.nextPageToken).toBeUndefined();
    // query: a case-insensitive substring of the id, aliases, artifact or component.
    const byAlias = await rest("GET", `${advisories}?${within}&query=cve-2024`);
    expect(names(byAlias.json)).toEqual(["GO-2024-0001"]);
    const byId = await rest("GET", `${advisories}?${within}&query=go-2024`);
    expect(byId.json.totalCount).toBe("2");
    const byEvent = await rest("GET", `${advisories}?${within}&latestEventType=DETECTED`);
    expect(names(byEvent.json)).toEqual(["GO-2024-0001"]);

    // Without updateMask the fields present change; the others stay.
    await tick();
    const present = await rest("PATCH", `${advisories}/${uid}`, {
      events: [
        { time: "2024-01-02T03:04:05.000Z", type: "DETECTED" },
        { time: "2024-02-02T03:04:05Z", type: "FIXED", fixedVersion: "1.2.3" },
      ],
    });
    expect(present.status).toBe(200);
    expect(present.json).toMatchObject({
      advisoryId: "GO-2024-0001",
      summary: "bad things",
      latestEventType: "FIXED",
      createTime: made.json.createTime,
    });
    expect(present.json.updateTime).not.toBe(made.json.updateTime);
    // With updateMask only the masked fields change, even if others are sent.
    const masked = await rest("PATCH", `${advisories}/${uid}?updateMask=summary`, {
      summary: "worse things",
      advisoryId: "IGNORED-1",
      aliases: [],
    });
    expect(masked.json).toMatchObject({
      advisoryId: "GO-2024-0001",
      aliases: ["CVE-2024-1234"],
      summary: "worse things",
      latestEventType: "FIXED",
    });

    expect(await rest("DELETE", `${advisories}/${uid}`)).toMatchObject({ status: 200, json: {} });
    expect(await rest("GET", `${advisories}/${uid}`)).toMatchObject({
      status: 404,
      json: { code: 5 },
    });
  });

  it("reports each failing field in the BadRequest detail", async () => {
    const r = await rest("POST", `${advisories}/${org.uid}`, {
      advisoryId: "",
      severities: [{ score: "1" }],
    });
    expect(r).toMatchObject({ status: 400, json: { code: 3 } });
    expect(badRequestFields(r.json)).toEqual(["advisory_id", "severities[0].type"]);
  });

  it("lets the owner read advisories but not write them", async () => {
    const made = await rest("POST", `${advisories}/${org.uid}`, { advisoryId: "OWN-1" });
    const as = org.owner.headers;
    expect((await rest("GET", `${advisories}/${made.json.uid}`, undefined, as)).json).toEqual(
      made.json,
    );
    const writes = [
      rest("POST", `${advisories}/${org.uid}`, { advisoryId: "OWN-2" }, as),
      rest("PATCH", `${advisories}/${made.json.uid}`, { summary: "x" }, as),
      rest("DELETE", `${advisories}/${made.json.uid}`, undefined, as),
    ];
    for (const w of await Promise.all(writes)) {
      expect(w).toMatchObject({ status: 403, json: { code: 7 } });
    }
  });
});
