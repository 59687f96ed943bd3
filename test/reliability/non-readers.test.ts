import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http2 from "node:http2";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort } from "../helpers/test-server.js";
import { type ChildServer, startChildServer } from "./helpers/child-server.js";

// Issue 36 item 2: clients that never read their answers are reset once what they hold
// passes a bound, on HTTP/1.1 and HTTP/2, and the server process stays under its documented
// memory ceiling (README "Connections, stalls and shutdown": 512 MB). Before, HTTP/1.1
// non-readers that held less than 4 MiB each were never reset (1,000 of them held 604 MB).
// The budgets of what stalled connections hold together, overall and per address, reset the
// largest of them within a sweep or two; what is left under the budgets is reset when it has
// read nothing for the stall time (4 s here; the sweep still runs once a second, as in
// production). At 15 s the test spent 15 s of its 20 s waiting for that reset. Tried with a
// stall time of 15 s and of 3 s: with the stall reset taken out (the fault this test was
// written for) it times out at both; with the budgets taken out it passes at both (peak RSS
// 194 and 193 MB): what it holds the server to does not depend on the setting.

const ceilingMb = 512;
const page = "/docs/swagger-ui-bundle.js";
const dir = mkdtempSync(join(tmpdir(), "gatehouse-non-readers-"));
let port: number;
let child: ChildServer | undefined;

beforeAll(async () => {
  port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  child = await startChildServer(url, {
    GATEHOUSE_DB: join(dir, "gatehouse.db"),
    GATEHOUSE_HOST: "127.0.0.1",
    GATEHOUSE_PORT: String(port),
    GATEHOUSE_BASE_URL: url,
    GATEHOUSE_LOG_LEVEL: "warn",
    GATEHOUSE_UNSENT_STALL_MS: "4000",
  });
});
afterAll(async () => {
  child?.process.kill("SIGKILL");
  await child?.exited;
  rmSync(dir, { recursive: true, force: true });
});

/** The server process's resident memory, in MB. */
function rssMb(): number {
  try {
    const status = readFileSync(`/proc/${child!.process.pid}/status`, "utf8");
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0; // the process is gone
  }
}

/** An HTTP/1.1 client pipelining `n` GETs of the page and reading nothing: resolves when reset. */
function h1NonReader(n: number): Promise<void> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1", () => {
      s.write(`GET ${page} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`.repeat(n));
      s.pause();
    });
    s.on("error", () => undefined);
    // A paused socket sees a reset only when it writes: an empty line (allowed between
    // requests) every half second.
    const probe = setInterval(() => {
      if (!s.destroyed) s.write("\r\n");
    }, 500);
    s.once("close", () => {
      clearInterval(probe);
      resolve();
    });
  });
}

/** An HTTP/2 client asking for the page on `n` streams and reading none: resolves when reset. */
function h2NonReader(n: number): Promise<void> {
  return new Promise((resolve) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on("error", () => undefined);
    session.once("close", () => resolve());
    session.once("connect", () => {
      for (let i = 0; i < n; i++) {
        const stream = session.request({ ":path": page });
        stream.on("error", () => undefined);
        stream.pause();
      }
    });
  });
}

it("resets clients that never read and stays under the memory ceiling", {
  timeout: 90_000,
}, async () => {
  const before = rssMb();
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb());
  }, 100);
  try {
    // 300 HTTP/1.1 connections pipelining 8 GETs of a 1.4 MB file, and 30 HTTP/2 connections
    // with 100 streams of it: each HTTP/1.1 one holds less than the 4 MiB budget of one
    // connection, which alone never reset them.
    await Promise.all([
      ...Array.from({ length: 300 }, () => h1NonReader(8)),
      ...Array.from({ length: 30 }, () => h2NonReader(100)),
    ]);
  } finally {
    clearInterval(sampler);
  }
  const health = await fetch(`http://127.0.0.1:${port}/healthz`);
  expect(health.status).toBe(200);
  const after = rssMb();
  console.log(
    `non-readers reset; server RSS ${before.toFixed(0)} MB before, ` +
      `${peak.toFixed(0)} MB peak, ${after.toFixed(0)} MB after`,
  );
  expect(peak).toBeLessThan(ceilingMb);
});
