import http2 from "node:http2";
import net from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

// The bound of requests one client address runs at once (GATEHOUSE_MAX_RUNNING_PER_ADDRESS,
// src/fair-starts.ts) over HTTP/2, where streams start with nothing attached to them until
// their address reaches the bound (issue 38): there, the streams still running must be found
// and followed, so that the next stream waits for one of them, and starts when one ends.

let t: TestServer;
let auth: Record<string, string>;
beforeAll(async () => {
  t = await startTestServer({ GATEHOUSE_MAX_RUNNING_PER_ADDRESS: "2" });
  auth = (await t.makeOrg()).owner.headers;
});
afterAll(async () => {
  await t.close();
});

/** An HTTP/2 connection to the server from `localAddress`. */
function session(localAddress: string): http2.ClientHttp2Session {
  const s = http2.connect(t.url, {
    createConnection: () => net.connect({ host: "127.0.0.1", port: t.port, localAddress }),
  });
  s.on("error", () => undefined);
  return s;
}

/**
 * An authenticated Connect call whose body never ends: it runs, waiting for its message,
 * answering nothing.
 */
function hanging(s: http2.ClientHttp2Session): http2.ClientHttp2Stream {
  const stream = s.request({
    ":method": "POST",
    ":path": "/gatehouse.iam.v2beta1.GroupsService/GetGroup",
    "content-type": "application/json",
    ...auth,
  });
  stream.on("error", () => undefined);
  stream.write("{");
  return stream;
}

/** A GET answered at once when it runs (no token: 401); resolves with its status. */
function quick(s: http2.ClientHttp2Session): Promise<number> {
  return new Promise((resolve, reject) => {
    const stream = s.request({ ":path": "/iam/v2beta1/groups/nope" });
    stream.once("response", (h) => {
      stream.resume();
      resolve(Number(h[":status"]));
    });
    stream.once("error", reject);
    stream.end();
  });
}

/** Resolves once the server has read what `s` sent before (a PING is answered in order). */
function barrier(s: http2.ClientHttp2Session): Promise<void> {
  return new Promise((resolve, reject) => {
    s.ping((err) => (err ? reject(err) : resolve()));
  });
}

it("runs at most the bound of one address's HTTP/2 streams, the next when one ends", async () => {
  const a = session("127.0.0.1");
  const b = session("127.0.0.2");
  try {
    // Below the bound, a stream runs at once.
    expect(await quick(a)).toBe(401);
    const first = hanging(a);
    const second = hanging(a);
    let thirdAnswered = false;
    const third = quick(a).then((status) => {
      thirdAnswered = true;
      return status;
    });
    await barrier(a);
    // The two hanging calls run, the third waits; another address is not held up.
    expect(await quick(b)).toBe(401);
    await barrier(a);
    expect(thirdAnswered).toBe(false);
    // One of the two running ends (its client resets it): the third runs.
    first.close(http2.constants.NGHTTP2_CANCEL);
    expect(await third).toBe(401);
    second.close(http2.constants.NGHTTP2_CANCEL);
  } finally {
    a.destroy();
    b.destroy();
  }
});
