import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newPgDatabase } from "../helpers/postgres.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { startWebhookSink, type WebhookSink } from "../helpers/webhook-sink.js";

// Two servers on one PostgreSQL database, each running its deliverer against the shared
// outbox: the leases taken with FOR UPDATE SKIP LOCKED give every delivery to one of them.

describe("webhook deliverers of two replicas", () => {
  let a: TestServer;
  let b: TestServer;
  let sink: WebhookSink;
  beforeAll(async () => {
    sink = await startWebhookSink();
    const env = {
      GATEHOUSE_DATABASE_URL: await newPgDatabase(),
      GATEHOUSE_WEBHOOK_ALLOW_HTTP_LOOPBACK: "true",
      GATEHOUSE_WEBHOOK_POLL_MS: "10",
      GATEHOUSE_WEBHOOK_CONCURRENCY: "4",
    };
    a = await startTestServer(env);
    b = await startTestServer(env);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await sink?.close();
  });

  it("delivers each event once between them", { timeout: 60_000 }, async () => {
    // Slow answers keep both deliverers busy at once.
    sink.answer = (res) => {
      setTimeout(() => {
        res.statusCode = 204;
        res.end();
      }, 20);
    };
    const org = await a.makeOrg();
    const headers = { ...org.owner.headers, "content-type": "application/json" };
    const sub = await fetch(`${a.url}/events/v2beta1/subscriptions/${org.uid}`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        name: "shared",
        sink: sink.url,
        eventTypes: ["dev.gatehouse.iam.group.created.v1"],
      }),
    });
    expect(sub.status).toBe(200);
    const n = 40;
    const made = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        // Written through one (tokens name its address), delivered by both.
        fetch(`${a.url}/iam/v2beta1/groups/${org.uid}`, {
          method: "POST",
          headers,
          body: JSON.stringify({ name: `g${i}` }),
        }).then(async (r) => {
          const body = (await r.json()) as { uid: string };
          expect(r.status, JSON.stringify(body)).toBe(200);
          return body.uid;
        }),
      ),
    );
    await sink.waitFor(n, 30_000);
    // A moment for a duplicate, if any, to arrive.
    await new Promise((r) => setTimeout(r, 300));
    const subjects = sink.received.map((r) => (JSON.parse(r.body) as { subject: string }).subject);
    expect(subjects.sort()).toEqual([...made].sort());
    expect(new Set(sink.received.map((r) => JSON.parse(r.body).id)).size).toBe(n);
  });
});
