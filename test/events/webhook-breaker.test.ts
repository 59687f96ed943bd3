import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backends, startTestServer, type TestServer } from "../helpers/test-server.js";
import { startWebhookSink, type WebhookSink } from "../helpers/webhook-sink.js";

// A sink's circuit breaker against a real failing sink on 127.0.0.1: after 5 failures in a
// row its subscription pauses (no attempt at all until the pause ends, as the API shows it),
// then one attempt at a time probes the sink, and a success closes the breaker.

describe.each(backends)("a webhook sink's circuit breaker on %s", (backend) => {
  let ts: TestServer;
  let sink: WebhookSink;
  beforeAll(async () => {
    sink = await startWebhookSink();
    ts = await startTestServer(
      {
        GATEHOUSE_WEBHOOK_ALLOW_HTTP_LOOPBACK: "true",
        GATEHOUSE_WEBHOOK_POLL_MS: "50",
        // A pause of 0.5-1 s after the fifth failure, each next one longer.
        GATEHOUSE_WEBHOOK_RETRY_BASE_MS: "1000",
        GATEHOUSE_WEBHOOK_RETRY_MAX_MS: "4000",
        GATEHOUSE_WEBHOOK_TIMEOUT_MS: "2000",
      },
      { backend },
    );
  });
  afterAll(async () => {
    await ts?.close();
    await sink?.close();
  });

  it("pauses a failing sink, probes it one attempt at a time, and resumes", {
    timeout: 60_000,
  }, async () => {
    const org = await ts.makeOrg();
    const headers = { ...org.owner.headers, "content-type": "application/json" };
    const arrivals: number[] = [];
    let healthy = false;
    // Each answer takes 200 ms: two attempts at once would overlap at the sink.
    sink.answer = (res) => {
      arrivals.push(Date.now());
      setTimeout(() => {
        res.statusCode = healthy ? 204 : 503;
        res.end();
      }, 200);
    };
    const made = await fetch(`${ts.url}/events/v2beta1/subscriptions/${org.uid}`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        name: "failing",
        sink: sink.url,
        eventTypes: ["dev.gatehouse.iam.group.created.v1"],
      }),
    });
    const { uid } = (await made.json()) as { uid: string };
    for (let i = 0; i < 8; i++) {
      const res = await fetch(`${ts.url}/iam/v2beta1/groups/${org.uid}`, {
        method: "POST",
        headers,
        body: JSON.stringify({ name: `g${i}` }),
      });
      expect(res.status).toBe(200);
    }
    const state = async () => {
      const res = await fetch(`${ts.url}/events/v2beta1/subscriptions/${uid}`, { headers });
      return ((await res.json()) as { delivery: Record<string, string> }).delivery;
    };
    let paused: Record<string, string> = {};
    let readAt = 0;
    for (let i = 0; i < 400 && paused.pausedUntil === undefined; i++) {
      await new Promise((r) => setTimeout(r, 20));
      readAt = Date.now();
      paused = await state();
    }
    expect(paused.pausedUntil, JSON.stringify(paused)).toBeDefined();
    expect(Number(paused.consecutiveFailures)).toBeGreaterThanOrEqual(5);
    expect(paused.lastError).toMatch(/failures in a row: deliveries paused for \d+ s/);
    const until = Date.parse(paused.pausedUntil!);
    // Nothing is attempted while paused, however many deliveries are due.
    while (Date.now() < until + 150) await new Promise((r) => setTimeout(r, 20));
    const during = arrivals.filter((t) => t > readAt && t < until);
    expect(during).toEqual([]);
    // Then one probe, alone (a closed breaker would send two at once).
    await sink.waitFor(arrivals.filter((t) => t <= readAt).length + 1, 10_000);
    const first = arrivals.find((t) => t >= until)!;
    expect(arrivals.filter((t) => t >= first && t < first + 200)).toHaveLength(1);
    // The sink is back: the next probe succeeds and every delivery goes.
    healthy = true;
    let after: Record<string, string> = {};
    for (let i = 0; i < 600 && after.deliveredCount !== "8"; i++) {
      await new Promise((r) => setTimeout(r, 50));
      after = await state();
    }
    expect(after).toMatchObject({ deliveredCount: "8", pendingCount: "0", lastError: "" });
    expect(after.consecutiveFailures ?? "0").toBe("0");
    expect(after.pausedUntil).toBeUndefined();
  });
});
