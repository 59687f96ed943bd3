import type { Interceptor } from "@connectrpc/connect";
import { expect } from "vitest";
import { createServer, type Server } from "../../src/server.js";
import { closeAtOnce, startTestServer, type TestServer } from "./test-server.js";

type Line = Record<string, unknown>;

/**
 * Two servers on one store, for holding the lean paths against the Connect router: `lean` as
 * it ships, `router` with GATEHOUSE_LEAN_PATHS=false. Both log at info into `logs` and run
 * `spy` after their own interceptors.
 */
export interface LeanPair {
  lean: TestServer;
  router: Server;
  routerUrl: string;
  logs: { lean: Line[]; router: Line[] };
  close(): Promise<void>;
}

export async function startLeanPair(
  spy: Interceptor,
  env: Record<string, string> = {},
): Promise<LeanPair> {
  const logs = { lean: [] as Line[], router: [] as Line[] };
  const lean = await startTestServer(
    { GATEHOUSE_LOG_LEVEL: "info", ...env },
    { interceptors: [spy], logStream: { write: (l) => void logs.lean.push(JSON.parse(l)) } },
  );
  const router = await createServer({
    config: { ...lean.config, port: 0, leanPaths: false },
    store: lean.store,
    interceptors: [spy],
    logStream: { write: (l) => void logs.router.push(JSON.parse(l)) },
    timeouts: closeAtOnce,
  });
  const routerUrl = `http://127.0.0.1:${(await router.listen()).port}`;
  return {
    lean,
    router,
    routerUrl,
    logs,
    async close() {
      await router.close();
      await lean.close();
    },
  };
}

/**
 * The request log line one server wrote for a call that `send` makes with request id `reqId`,
 * without what differs between any two lines (time, pid, host, id, duration).
 */
export async function logLineOf(
  pair: LeanPair,
  which: "lean" | "router",
  reqId: string,
  send: (url: string) => Promise<unknown>,
): Promise<Line> {
  await send(which === "lean" ? pair.lean.url : pair.routerUrl);
  // The line is written when the server sees the stream close, which may come after the client
  // has its answer: wait for it (a busy machine can take a while), but not forever.
  const find = () => pair.logs[which].find((l) => l.msg === "request" && l.reqId === reqId);
  for (let waited = 0; !find() && waited < 5_000; waited += 10) {
    await new Promise((r) => setTimeout(r, 10));
  }
  const line = find();
  expect(line).toBeDefined();
  const { time: _t, pid: _p, hostname: _h, durationMs, reqId: _r, ...rest } = line!;
  expect(durationMs).toEqual(expect.any(Number));
  return rest;
}
