import http2 from "node:http2";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

// Health needs no token, so its server streams are bounded: per connection, in all, and in
// idle time (an outside test held 1,000 Watch streams open past the idle timeout).

// The idle test's server has a short idle timeout; the bounds' server the production one, so
// that on a loaded machine its Watch streams do not idle out while the 100 are still opening
// (which freed places and let the one too many in).
let idle: TestServer;
let srv: TestServer;
const idleTimeoutMs = 600;

beforeAll(async () => {
  [idle, srv] = await Promise.all([
    startTestServer({}, { timeouts: { idleTimeoutMs } }),
    startTestServer(),
  ]);
});
afterAll(() => Promise.all([idle?.close(), srv?.close()]));

interface Watch {
  /** Resolves with the call's grpc-status when it ends. */
  ended: Promise<string | undefined>;
  /** Resolves on the first message (or the end, whichever comes first). */
  first: Promise<void>;
  /** Whether a message has arrived. */
  readonly answered: boolean;
  cancel(): void;
}

function watch(session: http2.ClientHttp2Session, headers: Record<string, string> = {}): Watch {
  const req = session.request({
    ":method": "POST",
    ":path": "/grpc.health.v1.Health/Watch",
    "content-type": "application/grpc",
    te: "trailers",
    ...headers,
  });
  let status: string | undefined;
  let onFirst: () => void = () => {};
  const first = new Promise<void>((r) => {
    onFirst = r;
  });
  req.on("response", (h) => {
    status ??= h["grpc-status"] as string | undefined;
  });
  req.on("trailers", (t) => {
    status = t["grpc-status"] as string | undefined;
  });
  let answered = false;
  req.on("data", () => {
    answered = true;
    onFirst();
  });
  const ended = new Promise<string | undefined>((resolve) => {
    req.on("close", () => {
      onFirst();
      resolve(status);
    });
  });
  req.on("error", () => {});
  req.end(Buffer.alloc(5)); // an empty HealthCheckRequest: the whole server
  return {
    ended,
    first,
    get answered() {
      return answered;
    },
    cancel: () => req.close(http2.constants.NGHTTP2_CANCEL),
  };
}

it("a Watch that has nothing to send ends after the idle timeout", async () => {
  const session = http2.connect(idle.url);
  const w = watch(session);
  await w.first;
  const started = Date.now();
  expect(await w.ended).toBe("0");
  // Ended by the idle timeout, not at once (a lower bound, which load cannot break).
  expect(Date.now() - started).toBeGreaterThanOrEqual(idleTimeoutMs / 2);
  session.close();
});

it("one connection holds at most 4 Watch streams", async () => {
  const session = http2.connect(srv.url);
  const open = Array.from({ length: 4 }, () => watch(session));
  await Promise.all(open.map((w) => w.first));
  const fifth = watch(session);
  expect(await fifth.ended).toBe("8");
  // Another connection is not held back by this one.
  const other = http2.connect(srv.url);
  const w = watch(other);
  await w.first;
  for (const o of [...open, w]) o.cancel();
  session.close();
  other.close();
});

it("at most 100 Watch streams in all; a closed one frees its place", async () => {
  const sessions = Array.from({ length: 25 }, () => http2.connect(srv.url));
  const open = sessions.flatMap((s) => Array.from({ length: 4 }, () => watch(s)));
  await Promise.all(open.map((w) => w.first));
  const extra = http2.connect(srv.url);
  expect(await watch(extra).ended).toBe("8");
  open[0]!.cancel();
  await open[0]!.ended;
  const again = watch(extra);
  await again.first;
  // Unary calls are not affected by the bound.
  const check = await fetch(`${srv.url}/readyz`);
  expect(check.status).toBe(200);
  for (const w of [...open, again]) w.cancel();
  for (const s of [...sessions, extra]) s.close();
});

it("100 anonymous Watch streams do not lock out a watcher with a token (issue 23)", async () => {
  const org = await srv.makeOrg("watcher");
  const sessions = Array.from({ length: 25 }, () => http2.connect(srv.url));
  const open = sessions.flatMap((s) => Array.from({ length: 4 }, () => watch(s)));
  await Promise.all(open.map((w) => w.first));
  const extra = http2.connect(srv.url);
  // Another anonymous watcher, or one whose token is not valid, is still refused...
  expect(await watch(extra).ended).toBe("8");
  expect(await watch(extra, { authorization: "Bearer not-a-token" }).ended).toBe("8");
  // ...but a real watcher gets a stream, and its first status.
  const real = watch(extra, org.owner.headers);
  await real.first;
  expect(real.answered).toBe(true);
  for (const w of [...open, real]) w.cancel();
  for (const s of [...sessions, extra]) s.close();
});
