import http2 from "node:http2";
import net from "node:net";
import { describe, expect, it } from "vitest";
import { useTestServer } from "../helpers/test-server.js";

// Slowloris: connections that dribble their headers, stop half-way or never speak are cut
// off by the timeouts, while other clients are served at once. The timeouts are shortened
// (production: headers 10 s, request 30 s, idle 65 s) to keep the suite to a few seconds.
// No absolute time bound (a loaded machine is slow at everything): a slow client's lifetime is
// judged against a silent connection's, cut by a timeout of the same order in the same run,
// and the others' latencies against theirs before the attack.

const timeouts = { headersTimeoutMs: 600, requestTimeoutMs: 1_000, idleTimeoutMs: 1_000 };
// The silent control is cut by the headers timeout, on a timer of its own; the slowest client
// here by the request timeout, which Node checks only every quarter of the headers timeout
// (src/one-port.ts): up to this many times later on a machine idle or loaded alike.
const slowestOverSilent =
  (timeouts.requestTimeoutMs + timeouts.headersTimeoutMs / 4) / timeouts.headersTimeoutMs;

const ts = useTestServer({}, { timeouts });

/** Open a connection that sends `first`, then one byte of `rest` every `everyMs`. */
function slowClient(first: string, rest: string, everyMs: number): Promise<number> {
  const started = Date.now();
  return new Promise((resolve) => {
    const socket = net.connect(ts.port, "127.0.0.1", () => {
      if (first !== "") socket.write(first);
      let i = 0;
      const timer = setInterval(() => {
        if (i < rest.length && !socket.destroyed) socket.write(rest[i++]!);
      }, everyMs);
      socket.once("close", () => {
        clearInterval(timer);
        resolve(Date.now() - started);
      });
    });
    socket.on("error", () => {});
    socket.resume();
  });
}

const endless = "X-Padding: 1\r\n".repeat(1000);

/** `/healthz` latencies of `n` requests one after another, in ms. */
async function healthLatencies(n: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const res = await fetch(`${ts.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
    expect(res.status).toBe(200);
    latencies.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  return latencies;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe("slow clients", () => {
  it("are cut off by the timeouts while others are served", async () => {
    const before = await healthLatencies(20);
    // The control: connections that never speak, cut by the headers or idle timeout.
    const silent = Array.from({ length: 5 }, () => slowClient("", "", 1000));
    const slow = [
      // Headers dribbled one byte at a time: the headers timeout is absolute.
      ...Array.from({ length: 20 }, () => slowClient("GET /healthz HTTP/1.1\r\n", endless, 50)),
      // A body that never comes: the request timeout.
      ...Array.from({ length: 10 }, () =>
        slowClient(
          "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n",
          "a".repeat(1000),
          50,
        ),
      ),
      // Connections that never send a byte, or only part of the HTTP/2 preface.
      ...Array.from({ length: 10 }, () => slowClient("", "", 1000)),
      ...Array.from({ length: 10 }, () => slowClient("PRI * HTTP/2.0\r\n", "", 1000)),
      // The HTTP/2 preface dribbled: deciding the protocol has a deadline too.
      ...Array.from({ length: 5 }, () => slowClient("", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 100)),
    ];

    // Meanwhile, normal requests are answered as quickly as before the attack: the typical
    // one within a few times the slowest one before (starved, they would wait for the cuts).
    const during = await healthLatencies(20);
    expect(median(during)).toBeLessThan(3 * Math.max(...before));

    // Every slow client is cut about when a silent one is: within twice the silent one's
    // lifetime, scaled by how much later its own timeout falls due (1 s request, checked
    // every 150 ms, against 600 ms headers).
    const lifetimes = await Promise.all(slow);
    const limit = 2 * slowestOverSilent * Math.max(...(await Promise.all(silent)));
    expect(lifetimes.filter((ms) => ms > limit)).toEqual([]);
  });

  it("over HTTP/2, a request whose body never completes is reset, the session served on", async () => {
    const session = http2.connect(ts.url);
    session.on("error", () => {});
    try {
      const started = Date.now();
      // The control: a silent connection, cut by the headers or idle timeout.
      const silent = slowClient("", "", 1000);
      const stream = session.request({
        ":method": "POST",
        ":path": "/gatehouse.iam.v2beta1.GroupsService/GetGroup",
        "content-type": "application/grpc",
        te: "trailers",
      });
      stream.on("error", () => {});
      stream.resume();
      // A five-byte message prefix announcing 1,000 bytes, then one byte every 50 ms: the
      // session never idles, the request never completes.
      stream.write(Buffer.from([0, 0, 0, 3, 232]));
      const trickle = setInterval(() => {
        if (!stream.closed) stream.write(Buffer.from([0]));
      }, 50);
      const lifetime = await new Promise<number>((resolve) =>
        stream.once("close", () => {
          clearInterval(trickle);
          resolve(Date.now() - started);
        }),
      );
      // Cut by the request timeout (1 s), not held while bytes keep coming: within twice the
      // silent control's lifetime, scaled as above.
      expect(lifetime).toBeLessThan(2 * slowestOverSilent * (await silent));
      // The same session still serves a well-formed call.
      const ok = session.request({ ":method": "GET", ":path": "/healthz" });
      const status = await new Promise<number>((resolve, reject) => {
        ok.once("response", (h) => resolve(Number(h[":status"])));
        ok.once("error", reject);
      });
      ok.close();
      expect(status).toBe(200);
    } finally {
      session.close();
    }
  });
});
