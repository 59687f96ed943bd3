import { createHmac } from "node:crypto";
import type { ServerResponse } from "node:http";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maxSubscriptionsPerOrganization } from "../../src/services/events/subscriptions.js";
import { newChildUid } from "../../src/uid.js";
import { iamClients, transportFor } from "../helpers/iam-clients.js";
import { parsePrometheusText, sampleValue } from "../helpers/prometheus-text.js";
import {
  backends,
  startTestServer,
  type TestOrg,
  type TestServer,
} from "../helpers/test-server.js";
import { startWebhookSink, type WebhookSink } from "../helpers/webhook-sink.js";

// Webhook subscriptions against real sinks on 127.0.0.1: what a subscriber receives, how
// failures are retried and given up, and what the API says about it.

const created = "dev.gatehouse.iam.group.created.v1";

describe.each(backends)("webhooks on %s", (backend) => {
  let ts: TestServer;
  let sink: WebhookSink;
  const logs: string[] = [];
  beforeAll(async () => {
    sink = await startWebhookSink();
    ts = await startTestServer(
      {
        GATEHOUSE_WEBHOOK_ALLOW_HTTP_LOOPBACK: "true",
        GATEHOUSE_WEBHOOK_POLL_MS: "50",
        GATEHOUSE_WEBHOOK_RETRY_BASE_MS: "50",
        GATEHOUSE_WEBHOOK_RETRY_MAX_MS: "200",
        GATEHOUSE_WEBHOOK_MAX_ATTEMPTS: "3",
        GATEHOUSE_WEBHOOK_TIMEOUT_MS: "2000",
        GATEHOUSE_LOG_LEVEL: "trace",
        GATEHOUSE_METRICS_PORT: "0",
      },
      { backend, logStream: { write: (line) => void logs.push(line) } },
    );
  });
  afterAll(async () => {
    await ts?.close();
    await sink?.close();
  });

  const rest = async (org: TestOrg, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${ts.url}${path}`, {
      method,
      headers: { ...org.owner.headers, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  const subscribe = async (org: TestOrg, sinkUrl: string, types = [created]) => {
    const res = await rest(org, "POST", `/events/v2beta1/subscriptions/${org.uid}`, {
      name: `hook ${Math.random()}`,
      sink: sinkUrl,
      eventTypes: types,
    });
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    return res.json as { uid: string; secret: string };
  };
  const scrape = async () =>
    parsePrometheusText(
      await (await fetch(`http://127.0.0.1:${ts.server.metricsPort}/metrics`)).text(),
    );
  /** The subscription's delivery state once `done` holds of it (polled). */
  const stateWhen = async (
    org: TestOrg,
    uid: string,
    done: (d: Record<string, unknown>) => boolean,
  ) => {
    for (let i = 0; i < 300; i++) {
      const { json } = await rest(org, "GET", `/events/v2beta1/subscriptions/${uid}`);
      const d = json.delivery as Record<string, unknown>;
      if (done(d)) return d;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error("the delivery state never got there");
  };

  it("delivers a signed CloudEvent that verifies with the secret shown once", async () => {
    const org = await ts.makeOrg();
    const sub = await subscribe(org, sink.url);
    expect(sub.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    const before = sink.received.length;
    const iam = iamClients(transportFor("grpc", ts.url, org.owner.headers));
    const group = await iam.groups.createGroup({ parent: org.uid, group: { name: "watched" } });
    const [got] = (await sink.waitFor(before + 1)).slice(before);
    expect(got!.method).toBe("POST");
    expect(got!.headers["content-type"]).toBe("application/cloudevents+json; charset=utf-8");
    const event = JSON.parse(got!.body) as Record<string, unknown>;
    expect(event).toMatchObject({
      specversion: "1.0",
      type: created,
      source: "/gatehouse.iam.v2beta1.GroupsService",
      subject: group.uid,
      datacontenttype: "application/json",
      data: { actor: { uid: org.owner.uid }, protocol: "grpc" },
    });
    expect(event.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // The receiver's check, with nothing of Gatehouse's code: HMAC-SHA256 over "t.body".
    const sig = String(got!.headers["gatehouse-signature"]);
    const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(sig) ?? [];
    expect(Math.abs(Number(t) - Date.now() / 1000)).toBeLessThan(60);
    expect(v1).toBe(createHmac("sha256", sub.secret).update(`${t}.${got!.body}`).digest("hex"));
    expect(v1).not.toBe(createHmac("sha256", "another").update(`${t}.${got!.body}`).digest("hex"));
    // The same event as the audit trail lists it.
    const listed = await rest(org, "GET", `/events/v2beta1/events?uidp.childrenOf=${group.uid}`);
    expect((listed.json.events as { id: string }[])[0]!.id).toBe(event.id);

    const state = await stateWhen(org, sub.uid, (d) => d.deliveredCount === "1");
    expect(state).toMatchObject({ pendingCount: "0", lastStatus: 204, lastError: "" });
    expect(state.lastSuccessTime).toBeDefined();

    // Never again: not in Get, List, the audit trail (the create's own event) or the log.
    const one = await rest(org, "GET", `/events/v2beta1/subscriptions/${sub.uid}`);
    const all = await rest(
      org,
      "GET",
      `/events/v2beta1/subscriptions?uidp.descendantsOf=${org.uid}`,
    );
    const trail = await rest(org, "GET", `/events/v2beta1/events?uidp.descendantsOf=${org.uid}`);
    expect(
      (trail.json.events as { type: string }[]).some(
        (e) => e.type === "dev.gatehouse.events.subscription.created.v1",
      ),
    ).toBe(true);
    for (const text of [
      JSON.stringify(one.json),
      JSON.stringify(all.json),
      JSON.stringify(trail.json),
    ]) {
      expect(text).not.toContain(sub.secret);
    }
    expect(one.json.secret ?? "").toBe("");
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.join("")).not.toContain(sub.secret);
  });

  // Before one type per change, a v1 write had a type of its own (iam.groups.created): a
  // subscription naming it keeps receiving those changes, recorded under today's type.
  it("keeps a subscription to a legacy v1 type receiving its changes", async () => {
    const org = await ts.makeOrg();
    const legacy = "dev.gatehouse.iam.groups.created.v1";
    // As a database from before holds it: the old name stored as it was written.
    const stored = await ts.store.createSubscription({
      uid: newChildUid(org.uid),
      groupUid: org.uid,
      name: "from before",
      description: "",
      sink: sink.url,
      eventTypes: [legacy],
      secret: "whsec_legacy",
      now: Date.now(),
    });
    // Written today through the API, the old name is stored as the current one.
    const made = await subscribe(org, sink.url, [legacy, "dev.gatehouse.iam.batch.created.v1"]);
    const { json } = await rest(org, "GET", `/events/v2beta1/subscriptions/${made.uid}`);
    expect(json.eventTypes).toEqual([created, "dev.gatehouse.iam.role_binding.created.v1"]);
    const v1 = await rest(org, "POST", `/iam/v1/groups/${org.uid}`, { name: "made-in-v1" });
    expect(v1.status, JSON.stringify(v1.json)).toBe(200);
    await iamClients(transportFor("connect", ts.url, org.owner.headers)).groups.createGroup({
      parent: org.uid,
      group: { name: "made-in-v2" },
    });
    for (const uid of [stored.uid, made.uid]) {
      const d = await stateWhen(org, uid, (d) => Number(d.deliveredCount ?? 0) >= 2);
      expect(Number(d.deliveredCount)).toBe(2);
    }
  });

  it("retries an answer of 500 with the same event, then counts the delivery", async () => {
    const org = await ts.makeOrg();
    const flaky = await startWebhookSink();
    try {
      flaky.answer = (res, i) => {
        res.statusCode = i === 0 ? 500 : 200;
        res.end("ok");
      };
      const sub = await subscribe(org, flaky.url);
      const iam = iamClients(transportFor("connect", ts.url, org.owner.headers));
      await iam.groups.createGroup({ parent: org.uid, group: { name: "retried" } });
      const [first, second] = await flaky.waitFor(2);
      expect(JSON.parse(second!.body).id).toBe(JSON.parse(first!.body).id);
      expect([first!.headers["gatehouse-attempt"], second!.headers["gatehouse-attempt"]]).toEqual([
        "1",
        "2",
      ]);
      const state = await stateWhen(org, sub.uid, (d) => d.deliveredCount === "1");
      expect(state).toMatchObject({ failedAttempts: "1", abandonedCount: "0", pendingCount: "0" });
    } finally {
      await flaky.close();
    }
  });

  it("gives up on a dead sink after the configured attempts and records it", async () => {
    const org = await ts.makeOrg();
    const dead = await startWebhookSink();
    try {
      // The first answer waits until the outbox depth is read, with the delivery in flight.
      let held: ServerResponse | undefined;
      dead.answer = (res, i) => {
        res.statusCode = 503;
        if (i === 0) held = res;
        else res.end();
      };
      const sub = await subscribe(org, dead.url);
      const iam = iamClients(transportFor("connect", ts.url, org.owner.headers));
      await iam.groups.createGroup({ parent: org.uid, group: { name: "lost" } });
      await dead.waitFor(1);
      const during = await scrape();
      expect(during.types.get("gatehouse_webhook_outbox_depth")).toBe("gauge");
      expect(sampleValue(during, "gatehouse_webhook_outbox_depth", {})).toBeGreaterThanOrEqual(1);
      held!.end();
      const state = await stateWhen(org, sub.uid, (d) => d.abandonedCount === "1");
      expect(state).toMatchObject({
        deliveredCount: "0",
        failedAttempts: "3",
        pendingCount: "0",
        lastStatus: 503,
      });
      expect(state.lastError).toMatch(/^gave up after 3 attempts: the sink answered HTTP 503/);
      // Three attempts, not one more.
      await new Promise((r) => setTimeout(r, 400));
      expect(dead.received).toHaveLength(3);
      expect(logs.join("")).toContain("webhook delivery abandoned");
      // The failures, as Prometheus scrapes them.
      const after = await scrape();
      const attempts = (outcome: string) =>
        sampleValue(after, "gatehouse_webhook_delivery_attempts_total", { outcome });
      expect(attempts("failed")).toBeGreaterThanOrEqual(3);
      expect(attempts("abandoned")).toBeGreaterThanOrEqual(1);
    } finally {
      await dead.close();
    }
  });

  it("follows no redirect: a 3xx is a failed attempt", async () => {
    const org = await ts.makeOrg();
    const target = await startWebhookSink();
    const redirecting = await startWebhookSink();
    try {
      redirecting.answer = (res) => {
        res.writeHead(307, { location: target.url });
        res.end();
      };
      const sub = await subscribe(org, redirecting.url);
      const iam = iamClients(transportFor("grpc", ts.url, org.owner.headers));
      await iam.groups.createGroup({ parent: org.uid, group: { name: "moved" } });
      const state = await stateWhen(org, sub.uid, (d) => d.abandonedCount === "1");
      expect(state).toMatchObject({ lastStatus: 307, deliveredCount: "0" });
      expect(target.received).toHaveLength(0);
    } finally {
      await target.close();
      await redirecting.close();
    }
  });

  it("delivers an event of a group below the subscription's, of the types it names only", async () => {
    const org = await ts.makeOrg();
    const own = await startWebhookSink();
    try {
      const iam = iamClients(transportFor("grpc", ts.url, org.owner.headers));
      const team = await iam.groups.createGroup({ parent: org.uid, group: { name: "team" } });
      const res = await rest(org, "POST", `/events/v2beta1/subscriptions/${team.uid}`, {
        name: "team hook",
        sink: own.url,
        eventTypes: ["dev.gatehouse.iam.group.updated.v1"],
      });
      expect(res.status).toBe(200);
      const sub = res.json as { uid: string };
      // Another group's change and a created event: not for this subscription.
      const other = await iam.groups.createGroup({ parent: org.uid, group: { name: "other" } });
      await iam.groups.updateGroup({ group: { uid: other.uid, description: "x" } });
      const below = await iam.groups.createGroup({ parent: team.uid, group: { name: "below" } });
      await iam.groups.updateGroup({ group: { uid: below.uid, description: "y" } });
      const [got] = await own.waitFor(1);
      expect(JSON.parse(got!.body)).toMatchObject({
        type: "dev.gatehouse.iam.group.updated.v1",
        subject: below.uid,
      });
      await stateWhen(org, sub.uid, (d) => d.deliveredCount === "1");
      expect(own.received).toHaveLength(1);
    } finally {
      await own.close();
    }
  });

  it("refuses sinks the SSRF rules forbid, and bad event types", async () => {
    const org = await ts.makeOrg();
    const refused = async (sinkUrl: string, types = [created]) => {
      const res = await rest(org, "POST", `/events/v2beta1/subscriptions/${org.uid}`, {
        name: "refused",
        sink: sinkUrl,
        eventTypes: types,
      });
      expect(res.status, sinkUrl).toBe(400);
      expect(res.json.code).toBe(Code.InvalidArgument);
      return String(res.json.message);
    };
    expect(await refused("http://hooks.example.com/x")).toContain("must be an https URL");
    expect(await refused("ftp://hooks.example.com/x")).toContain("must be an https URL");
    expect(await refused("https://10.1.2.3/x")).toContain("private");
    expect(await refused("https://169.254.169.254/latest/meta-data")).toContain("private");
    expect(await refused("https://[fd00::1]/x")).toContain("private");
    expect(await refused("https://[::ffff:192.168.1.1]/x")).toContain("private");
    expect(await refused("https://user:pw@hooks.example.com/x")).toContain("credentials");
    // The server itself, loopback sinks allowed or not (issue 35 N8).
    expect(await refused("http://0.0.0.0:8080/x")).toContain("unspecified");
    expect(await refused("https://[::]:8443/x")).toContain("unspecified");
    expect(await refused("not a url")).toContain("https URL");
    expect(await refused("https://hooks.example.com/x", ["dev.gatehouse.iam.*"])).toContain(
      "no wildcards",
    );
    expect(await refused("https://hooks.example.com/x", [])).toContain("at least one");
    // An https sink on a public name is accepted (its addresses are checked at delivery).
    const ok = await rest(org, "POST", `/events/v2beta1/subscriptions/${org.uid}`, {
      name: "public",
      sink: "https://hooks.example.com/x",
      eventTypes: [created],
    });
    expect(ok.status).toBe(200);
  });

  it("refuses a subscription past the organization's maximum", async () => {
    const org = await ts.makeOrg();
    for (let i = 0; i < maxSubscriptionsPerOrganization; i++) {
      await ts.store.createSubscription({
        uid: newChildUid(org.uid),
        groupUid: org.uid,
        name: `s${i}`,
        description: "",
        sink: "https://hooks.example.com/x",
        eventTypes: ["dev.gatehouse.iam.group.renamed.v1"],
        secret: "whsec_x",
        now: Date.now(),
      });
    }
    const res = await rest(org, "POST", `/events/v2beta1/subscriptions/${org.uid}`, {
      name: "one more",
      sink: "https://hooks.example.com/x",
      eventTypes: [created],
    });
    expect(res.status).toBe(400);
    expect(res.json.code).toBe(Code.FailedPrecondition);
    expect(String(res.json.message)).toContain("the most it may have");
  });

  it("updates and deletes a subscription; a deleted one gets nothing more", async () => {
    const org = await ts.makeOrg();
    const own = await startWebhookSink();
    try {
      const sub = await subscribe(org, own.url);
      const updated = await rest(org, "PATCH", `/events/v2beta1/subscriptions/${sub.uid}`, {
        description: "renamed",
        eventTypes: [created, "dev.gatehouse.iam.group.deleted.v1"],
      });
      expect(updated.status).toBe(200);
      expect(updated.json).toMatchObject({
        description: "renamed",
        eventTypes: [created, "dev.gatehouse.iam.group.deleted.v1"],
      });
      expect(updated.json.secret ?? "").toBe("");
      expect((await rest(org, "DELETE", `/events/v2beta1/subscriptions/${sub.uid}`)).status).toBe(
        200,
      );
      expect((await rest(org, "GET", `/events/v2beta1/subscriptions/${sub.uid}`)).status).toBe(404);
      const iam = iamClients(transportFor("grpc", ts.url, org.owner.headers));
      await iam.groups.createGroup({ parent: org.uid, group: { name: "unheard" } });
      // A subscription still there on another sink gets its event: the outbox is running.
      const check = await startWebhookSink();
      try {
        await subscribe(org, check.url);
        await iam.groups.createGroup({ parent: org.uid, group: { name: "heard" } });
        await check.waitFor(1);
        expect(own.received).toHaveLength(0);
      } finally {
        await check.close();
      }
    } finally {
      await own.close();
    }
  });
});
