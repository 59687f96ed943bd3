import http from "node:http";
import http2 from "node:http2";
import type { Interceptor } from "@connectrpc/connect";
import { createServer, type Server } from "../../src/server.js";
import { type Backend, closeAtOnce, startTestServer, type TestServer } from "./test-server.js";

// Two servers on one store, lean paths on and off, and one HTTP/2 session to each: what the
// differential suite (differential-suite.ts) sends its requests through, by hand, so that
// nothing is added, nothing decompressed and nothing normalized on the way back.

/** One line of a server's JSON log. */
export type LogLine = Record<string, unknown>;

/** The two servers of a differential run: `lean` as it ships, `router` with lean paths off. */
export interface DifferentialPair {
  lean: TestServer;
  router: Server;
  routerUrl: string;
  /** Each server's log lines (at info: a line per request), as written. */
  logs: { lean: LogLine[]; router: LogLine[] };
  /** Send the same request to each server, at once (they share the store). */
  both(req: RawRequest): Promise<{ lean: RawAnswer; router: RawAnswer }>;
  close(): Promise<void>;
}

/** One request as sent by hand: HTTP/2 unless `http1` (the Connect protocol allows both). */
export interface RawRequest {
  path: string;
  /** Header values; an array sends the header once per value. */
  headers: Record<string, string | string[]>;
  body: Uint8Array;
  http1?: boolean;
}

/**
 * One whole answer. `reset` is the RST_STREAM code, if the server reset the stream; a stream
 * reset before any answer (a request HTTP/2 itself refuses) is status 0.
 */
export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  trailers: Record<string, string | string[] | undefined>;
  body: Buffer;
  reset?: number;
}

/**
 * Start a differential pair on a fresh store of `backend`; `spies` run after each server's own
 * interceptors (to see which path served a call).
 */
export async function startDifferentialPair(
  backend: Backend,
  spies: { lean: Interceptor; router: Interceptor },
  now?: () => number,
): Promise<DifferentialPair> {
  const logs = { lean: [] as LogLine[], router: [] as LogLine[] };
  const lean = await startTestServer(
    { GATEHOUSE_LOG_LEVEL: "info" },
    {
      backend,
      interceptors: [spies.lean],
      logStream: { write: (l) => void logs.lean.push(JSON.parse(l)) },
      ...(now ? { now } : {}),
    },
  );
  const router = await createServer({
    config: { ...lean.config, port: 0, leanPaths: false },
    store: lean.store,
    interceptors: [spies.router],
    logStream: { write: (l) => void logs.router.push(JSON.parse(l)) },
    ...(now ? { now } : {}),
    timeouts: closeAtOnce,
  });
  const routerUrl = `http://127.0.0.1:${(await router.listen()).port}`;
  const sessions = { lean: h2Client(lean.url), router: h2Client(routerUrl) };
  const send = (which: "lean" | "router", req: RawRequest) => {
    const base = which === "lean" ? lean.url : routerUrl;
    return req.http1 ? h1Post(base, req) : sessions[which].send(req);
  };
  return {
    lean,
    router,
    routerUrl,
    logs,
    async both(req) {
      const [a, b] = await Promise.all([send("lean", req), send("router", req)]);
      return { lean: a, router: b };
    },
    async close() {
      sessions.lean.close();
      sessions.router.close();
      await router.close();
      await lean.close();
    },
  };
}

/** One HTTP/2 session to `url`, opened again when the server or a bad request ended it. */
function h2Client(url: string) {
  let session: http2.ClientHttp2Session | undefined;
  const open = () => {
    if (!session || session.closed || session.destroyed) {
      const s = http2.connect(url);
      // A session error also fails its streams, where the caller hears of it.
      s.on("error", () => undefined);
      session = s;
    }
    return session;
  };
  return {
    send(req: RawRequest): Promise<RawAnswer> {
      return new Promise<RawAnswer>((resolve) => {
        const stream = open().request({ ":method": "POST", ":path": req.path, ...req.headers });
        let head: http2.IncomingHttpHeaders = {};
        let trailers: http2.IncomingHttpHeaders = {};
        const chunks: Buffer[] = [];
        stream.on("response", (h) => {
          head = h;
        });
        stream.on("trailers", (t) => {
          trailers = t;
        });
        stream.on("data", (c: Buffer) => chunks.push(c));
        // A reset after the answer (the server stopped reading a body it refused) is part of
        // the answer, not a failure of the request.
        stream.on("error", () => undefined);
        stream.on("close", () => {
          const { ":status": status = 0, ...headers } = head;
          resolve({
            status: Number(status),
            headers,
            trailers,
            body: Buffer.concat(chunks),
            ...(stream.rstCode ? { reset: stream.rstCode } : {}),
          });
        });
        stream.end(req.body);
      });
    },
    close() {
      session?.close();
    },
  };
}

/** POST over HTTP/1.1, header names as given (case and all), on a connection of its own. */
function h1Post(base: string, req: RawRequest): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const r = http.request(
      `${base}${req.path}`,
      {
        method: "POST",
        headers: { ...req.headers, "content-length": String(req.body.length) },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            trailers: res.trailers,
            body: Buffer.concat(chunks),
          }),
        );
      },
    );
    r.on("error", reject);
    r.end(req.body);
  });
}

/**
 * Which path ran a call, from the stack of an interceptor: the lean paths run their
 * interceptors from the one unary pipeline (src/pipeline/unary-invocation.ts), the Connect
 * router from connect's invokeUnaryImplementation. Undefined when neither is on the stack.
 */
export function pathOf(stack: string): "lean" | "router" | undefined {
  if (/\/src\/pipeline\/unary-invocation\.[jt]s:/.test(stack)) return "lean";
  if (/ at (async )?invokeUnaryImplementation /.test(stack)) return "router";
  return undefined;
}
