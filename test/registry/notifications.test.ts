/**
 * `/registry/notifications` as distribution calls it: the envelopes a registry sends for
 * pushes and deletes, redelivered and out of order. The real registry sending them is
 * test/registry/docker-registry.test.ts.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { type Json, restCall } from "../helpers/rest-client.js";
import { startTestServer, type TestOrg, useTestServer } from "../helpers/test-server.js";

const secret = "a-notification-secret-for-tests";
let org: TestOrg;
const logs: string[] = [];

const gh = useTestServer(
  {
    GATEHOUSE_REGISTRY_AUDIENCE: "registry.test",
    GATEHOUSE_REGISTRY_NOTIFICATIONS_SECRET: secret,
    GATEHOUSE_LOG_LEVEL: "warn",
  },
  { logStream: { write: (line) => logs.push(line) } },
);
beforeAll(async () => {
  org = await gh.makeOrg("umbrella");
});

const digest = (c: string) => `sha256:${c.repeat(64)}`;
let ids = 0;

/** Send an envelope of `events` as the registry does. */
async function notify(events: Json[], authorization = `Bearer ${secret}`) {
  const res = await fetch(`${gh.url}/registry/notifications`, {
    method: "POST",
    headers: {
      "content-type": "application/vnd.docker.distribution.events.v1+json",
      authorization,
    },
    body: JSON.stringify({ events }),
  });
  return res.status;
}

const event = (action: string, repository: string, target: Json, at: number) => ({
  id: `event-${++ids}`,
  timestamp: new Date(at).toISOString(),
  action,
  target: { mediaType: "application/vnd.oci.image.manifest.v1+json", repository, ...target },
  request: { method: "PUT", useragent: "skopeo" },
});

async function tagsOf(repo: string) {
  const res = await restCall(
    gh.url,
    "GET",
    `/registry/v2beta1/tags?uidp.childrenOf=${repo}&orderBy=name`,
    undefined,
    org.owner.headers,
  );
  return (res.json.tags ?? []) as {
    uid: string;
    name: string;
    digest: string;
    updateTime: string;
  }[];
}

async function makeRepo(name: string) {
  const res = await restCall(
    gh.url,
    "POST",
    `/registry/v2beta1/repos/${org.uid}`,
    { name },
    org.owner.headers,
  );
  return res.json.uid as string;
}

describe("registry notifications", () => {
  it("creates and moves tags on pushes; redeliveries and stale events change nothing", async () => {
    const repo = await makeRepo("app");
    const t0 = Date.parse("2026-01-01T00:00:00Z");
    const first = event("push", "umbrella/app", { tag: "v1", digest: digest("a") }, t0);
    // A blob push and a push by digest move no tag.
    const blob = event("push", "umbrella/app", { digest: digest("f") }, t0);
    expect(await notify([blob, first])).toBe(200);
    const created = await tagsOf(repo);
    expect(created).toMatchObject([{ name: "v1", digest: digest("a") }]);
    expect(Date.parse(created[0]!.updateTime)).toBe(t0);

    expect(await notify([first])).toBe(200);
    expect(await tagsOf(repo)).toEqual(created);

    const moved = event("push", "umbrella/app", { tag: "v1", digest: digest("b") }, t0 + 1000);
    expect(await notify([moved])).toBe(200);
    expect(await tagsOf(repo)).toMatchObject([{ name: "v1", digest: digest("b") }]);
    // The first push again, late: the tag stays where the newer push put it.
    const late = event("push", "umbrella/app", { tag: "v1", digest: digest("a") }, t0);
    expect(await notify([late])).toBe(200);
    expect(await tagsOf(repo)).toMatchObject([{ name: "v1", digest: digest("b") }]);

    // The owner reads the pushes in the audit trail: a creation and a move, by the pusher
    // (the registry token's subject), once each: redeliveries and stale events record none.
    const pusher = { ...first, actor: { name: org.owner.uid } };
    const again = event("push", "umbrella/app", { tag: "v1", digest: digest("c") }, t0 + 2000);
    expect(await notify([pusher, { ...again, actor: { name: org.owner.uid } }])).toBe(200);
    const trail = await restCall(
      gh.url,
      "GET",
      `/events/v2beta1/events?uidp.childrenOf=${created[0]!.uid}`,
      undefined,
      org.owner.headers,
    );
    const events = trail.json.events as { type: string; data: { actor: { uid: string } } }[];
    expect(events.map((e) => e.type)).toEqual([
      "dev.gatehouse.registry.tag.created.v1",
      "dev.gatehouse.registry.tag.updated.v1",
      "dev.gatehouse.registry.tag.updated.v1",
    ]);
    expect(events.map((e) => e.data.actor.uid)).toEqual(["", "", org.owner.uid]);
  });

  it("removes a deleted tag, or every tag of a deleted manifest", async () => {
    const repo = await makeRepo("del");
    const t = Date.now();
    await notify([
      event("push", "umbrella/del", { tag: "a", digest: digest("1") }, t),
      event("push", "umbrella/del", { tag: "b", digest: digest("1") }, t),
      event("push", "umbrella/del", { tag: "c", digest: digest("2") }, t),
    ]);
    expect((await tagsOf(repo)).map((x) => x.name)).toEqual(["a", "b", "c"]);
    expect(await notify([event("delete", "umbrella/del", { tag: "c" }, t + 1)])).toBe(200);
    expect((await tagsOf(repo)).map((x) => x.name)).toEqual(["a", "b"]);
    const gone = event("delete", "umbrella/del", { digest: digest("1") }, t + 2);
    expect(await notify([gone])).toBe(200);
    expect(await tagsOf(repo)).toEqual([]);
    expect(await notify([gone])).toBe(200);
  });

  it("acknowledges and logs events for unknown repos and bad targets", async () => {
    logs.length = 0;
    const status = await notify([
      event("push", "umbrella/nothing", { tag: "v1", digest: digest("c") }, Date.now()),
      event("push", "umbrella/app", { tag: "../x", digest: digest("c") }, Date.now()),
      event("pull", "umbrella/app", { tag: "v1", digest: digest("c") }, Date.now()),
      "not an event",
    ]);
    expect(status).toBe(200);
    expect(logs.join("")).toMatch(/registry event ignored: no such repo/);
    expect(logs.join("")).toMatch(/registry event ignored: bad tag or digest/);
    expect(logs.join("")).not.toContain(secret);
  });

  it("logs a flood of events for unknown repos once per repo, not once per event", async () => {
    logs.length = 0;
    const at = Date.now();
    // Three envelopes of 600 events over 5 unknown repos, and 40 events each naming another.
    const flood = (n: number) =>
      Array.from({ length: n }, (_, i) =>
        event("push", `umbrella/ghost-${i % 5}`, { tag: "v1", digest: digest("d") }, at),
      );
    for (const status of await Promise.all([
      notify(flood(600)),
      notify(flood(600)),
      notify(flood(600)),
    ])) {
      expect(status).toBe(200);
    }
    const many = Array.from({ length: 40 }, (_, i) =>
      event("push", `umbrella/other-${i}`, { tag: "v1", digest: digest("d") }, at),
    );
    expect(await notify(many)).toBe(200);
    const lines = logs
      .join("")
      .split("\n")
      .filter((l) => l.includes("registry event ignored"));
    // One line per repository: 5 + 40, not 1,840.
    expect(lines).toHaveLength(45);
    expect(lines.filter((l) => l.includes("umbrella/ghost-0"))).toHaveLength(1);
  });

  it("records one creation when pushes of a new tag arrive at once", async () => {
    const repo = await makeRepo("race");
    const at = Date.now();
    const pushes = ["1", "2", "3", "4", "5", "6"].map((d, i) =>
      event("push", "umbrella/race", { tag: "v1", digest: digest(d) }, at + i),
    );
    const statuses = await Promise.all(pushes.map((p) => notify([p])));
    expect(statuses.every((s) => s === 200)).toBe(true);
    const [tag] = await tagsOf(repo);
    const trail = await restCall(
      gh.url,
      "GET",
      `/events/v2beta1/events?uidp.childrenOf=${tag!.uid}`,
      undefined,
      org.owner.headers,
    );
    const events = trail.json.events as { type: string; time: string }[];
    const created = events.filter((e) => e.type === "dev.gatehouse.registry.tag.created.v1");
    expect(created).toHaveLength(1);
    // The creation came first: no update is older. (Two commits in one millisecond share a
    // time, and the list orders such a tie by event id, so "first in the list" would flake.)
    const createdAt = Date.parse(created[0]!.time);
    expect(events.filter((e) => Date.parse(e.time) < createdAt)).toEqual([]);
  });

  it("refuses what is not an envelope", async () => {
    const res = await fetch(`${gh.url}/registry/notifications`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
      body: JSON.stringify({ nope: true }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as Json).error_description).toMatch(/envelope/);
    const broken = await fetch(`${gh.url}/registry/notifications`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
      body: "{",
    });
    expect(broken.status).toBe(400);
  });

  it("is off without a secret", async () => {
    const off = await startTestServer({ GATEHOUSE_REGISTRY_AUDIENCE: "registry.test" });
    try {
      const res = await fetch(`${off.url}/registry/notifications`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer " },
        body: JSON.stringify({ events: [] }),
      });
      expect(res.status).toBe(404);
    } finally {
      await off.close();
    }
  });
});
