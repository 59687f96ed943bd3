import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { newPgDatabase } from "../helpers/postgres.js";
import { runCli } from "../helpers/run-cli.js";
import { backends, freePort } from "../helpers/test-server.js";
import { startWebhookSink, type WebhookSink } from "../helpers/webhook-sink.js";
import { type ChildServer, startChildServer } from "./helpers/child-server.js";

// A real server process killed with SIGKILL after a change committed and while its event's
// delivery was in flight: the delivery row committed with the event, so the restarted server
// delivers it (at least once: the sink sees the same event again, whole this time).

const dir = mkdtempSync(join(tmpdir(), "gatehouse-webhook-crash-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each(backends)("webhook outbox across a crash on %s", (backend) => {
  let child: ChildServer | undefined;
  let sink: WebhookSink | undefined;
  afterAll(async () => {
    child?.process.kill("SIGKILL");
    await child?.exited;
    await sink?.close();
  });

  it("delivers after a restart what was committed before the kill", {
    timeout: 60_000,
  }, async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const env = {
      ...(backend === "sqlite"
        ? { GATEHOUSE_DB: join(dir, `${backend}.db`) }
        : { GATEHOUSE_DATABASE_URL: await newPgDatabase({ migrated: false }) }),
      GATEHOUSE_HOST: "127.0.0.1",
      GATEHOUSE_PORT: String(port),
      GATEHOUSE_BASE_URL: url,
      GATEHOUSE_LOG_LEVEL: "warn",
      GATEHOUSE_WEBHOOK_ALLOW_HTTP_LOOPBACK: "true",
      GATEHOUSE_WEBHOOK_POLL_MS: "50",
      GATEHOUSE_WEBHOOK_TIMEOUT_MS: "1000",
      // The dead process's lease ends 1.5 s after its claim (timeout and margin), not 6 s:
      // the restarted one waited out the default 5 s margin for nothing.
      GATEHOUSE_WEBHOOK_LEASE_MARGIN_MS: "500",
      GATEHOUSE_WEBHOOK_RETRY_BASE_MS: "100",
    };
    const boot = await runCli(["bootstrap", "--org", "crash"], env);
    expect(boot.code, boot.stderr).toBe(0);
    const { orgUid, token } = JSON.parse(boot.stdout) as { orgUid: string; token: string };
    const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    sink = await startWebhookSink();
    // The first process's attempt never gets an answer: it dies with the delivery in flight.
    sink.answer = () => undefined;

    child = await startChildServer(url, env);
    const sub = await fetch(`${url}/events/v2beta1/subscriptions/${orgUid}`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({
        name: "crash hook",
        sink: sink.url,
        eventTypes: ["dev.gatehouse.iam.group.created.v1"],
      }),
    });
    expect(sub.status).toBe(200);
    const { uid: subUid } = (await sub.json()) as { uid: string };
    const res = await fetch(`${url}/iam/v2beta1/groups/${orgUid}`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ name: "committed" }),
    });
    expect(res.status).toBe(200);
    const group = (await res.json()) as { uid: string };
    const [inFlight] = await sink.waitFor(1);
    child.process.kill("SIGKILL");
    expect(await child.exited).toBe("SIGKILL");
    expect(JSON.parse(inFlight!.body)).toMatchObject({ subject: group.uid });

    // The next process finds the delivery (once the dead one's lease ran out) and sends it.
    sink.answer = 204;
    child = await startChildServer(url, env);
    const [, again] = await sink.waitFor(2, 30_000);
    expect(JSON.parse(again!.body)).toMatchObject({
      id: JSON.parse(inFlight!.body).id,
      type: "dev.gatehouse.iam.group.created.v1",
      subject: group.uid,
    });
    // The dead process's attempt counts (issue 36 item 6): counted when it was claimed.
    expect(inFlight!.headers["gatehouse-attempt"]).toBe("1");
    expect(again!.headers["gatehouse-attempt"]).toBe("2");
    let state: Record<string, string> = {};
    for (let i = 0; i < 100 && state.deliveredCount !== "1"; i++) {
      const got = await fetch(`${url}/events/v2beta1/subscriptions/${subUid}`, { headers: auth });
      state = ((await got.json()) as { delivery: Record<string, string> }).delivery;
      if (state.deliveredCount !== "1") await new Promise((r) => setTimeout(r, 50));
    }
    expect(state).toMatchObject({ deliveredCount: "1", pendingCount: "0" });
    child.process.kill("SIGTERM");
    expect(await child.exited).toBe(0);
  });
});
