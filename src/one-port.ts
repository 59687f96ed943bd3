import http from "node:http";
import http2 from "node:http2";
import net, { type AddressInfo, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { type SlicedAnswer, sliceAnswer } from "./answer-slices.js";
import { createFairStarts, type FairStarts } from "./fair-starts.js";
import {
  boundReadAhead,
  listenersNow,
  type ReadAhead,
  type ServerListeners,
  serverListenersAdded,
} from "./read-ahead.js";

/** Takes an HTTP/2 stream (returns true) or leaves it for the request handler. */
export type StreamTaker = (
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
) => boolean;

type RequestHandler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

/** TLS material: with it, the port speaks TLS and negotiates h2 or http/1.1 by ALPN. */
export interface TlsOptions {
  cert: string | Buffer;
  key: string | Buffer;
}

/** Timeouts that keep slow or idle clients from holding connections forever. */
export interface Timeouts {
  /** Time allowed to receive the request headers. */
  headersTimeoutMs: number;
  /** Time allowed to receive the whole request. */
  requestTimeoutMs: number;
  /** Idle time before a keep-alive connection or HTTP/2 session is closed. */
  idleTimeoutMs: number;
  /**
   * A shut-down server closes an HTTP/1.1 keep-alive connection idle this long. One its client
   * reuses sooner gets its answer with `Connection: close` instead: closing a connection a
   * client is about to send on would reset that request. A second covers clients that pause
   * between calls (the red team's writers paused 150-350 ms and were reset at 250 ms); a
   * request that still crosses the close is refused before it runs (see Pipeline.closing).
   * In-process test servers, whose clients are done when they close, take 0.
   */
  shutdownIdleMs: number;
}

const defaultTimeouts: Timeouts = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 65_000,
  shutdownIdleMs: 1_000,
};

/**
 * Bounds on what clients may hold, so that a few hostile ones cannot take the memory or the
 * time others need. Every one applies to both protocols, with TLS or without.
 */
export interface ConnectionLimits {
  /** Open connections in all; one more is closed at once. */
  maxConnections: number;
  /** Open connections from one client address; one more is closed at once. */
  maxConnectionsPerAddress: number;
  /**
   * Requests of one client address running at once, over all its connections and protocols
   * (from their start until their answer's head is written); the next ones wait their turn,
   * none is refused.
   */
  maxRunningPerAddress: number;
  /**
   * Requests started in one turn of the event loop, over all addresses; the next ones start
   * in the following turns, one an address a round (src/fair-starts.ts).
   */
  maxStartsPerTurn: number;
  /**
   * HTTP/2 connections of one client address open at once that may have 100 streams each;
   * the ones past them may have `narrowSessionStreams` (sent in their first SETTINGS, so the
   * streams past it are refused by nghttp2 before Node builds anything for them).
   */
  wideSessionsPerAddress: number;
  /**
   * Unanswered requests one HTTP/1.1 connection may have pipelined. The one past it is
   * answered 503 with `Connection: close` (after the answers before it) and the connection
   * reads nothing more. HTTP/2 has its own bound: 100 concurrent streams a connection.
   */
  maxPipelinedRequests: number;
  /**
   * Answer bytes one client address's requests may start a turn of the event loop, on average
   * (src/fair-starts.ts): an address whose answers are large (a flood of console files) starts
   * one every few turns, not 16 of them in one.
   */
  answerBytesPerTurn: number;
  /** Answer bytes a connection may have waiting for its client to read them... */
  maxUnsentBytes: number;
  /**
   * ...for at most this long: a connection above the budget for longer is closed. So is one,
   * whatever it holds, whose client has read nothing of its waiting answers for this long.
   */
  unsentStallMs: number;
  /**
   * What connections whose clients read nothing may hold together (answer bytes waiting, and
   * a cost per request waiting or running on them): past it, the largest are reset within
   * a sweep or two (a few a turn: see createOnePort's resetQueue).
   */
  maxStalledBytes: number;
  /** ...and those from one client address. */
  maxStalledBytesPerAddress: number;
}

/** The production limits (README "Connections, stalls and shutdown"). */
export const defaultLimits: ConnectionLimits = {
  maxConnections: 4096,
  maxConnectionsPerAddress: 512,
  maxRunningPerAddress: 64,
  maxStartsPerTurn: 16,
  wideSessionsPerAddress: 4,
  maxPipelinedRequests: 64,
  answerBytesPerTurn: 64 * 1024,
  maxUnsentBytes: 4 * 1024 * 1024,
  unsentStallMs: 10_000,
  maxStalledBytes: 128 * 1024 * 1024,
  maxStalledBytesPerAddress: 48 * 1024 * 1024,
};

/**
 * What a request waiting or running on a connection is counted to hold, besides the answer
 * bytes waiting: its parsed request and answer objects (an HTTP/2 stream through fastify's
 * compatibility layer keeps about 25 kB; a parsed HTTP/1.1 request waiting its turn, less).
 */
const requestCostBytes = 16 * 1024;

/**
 * HTTP/1.1 requests of one connection that run at once; the rest of its pipeline waits its
 * turn. One: answers go out in order anyway, and a connection with a deep pipeline then takes
 * one turn of the event loop like any other, instead of eight (a control client's latency
 * under a pipelined flood of 50 connections: bench/RESULTS.md "Hostile load").
 */
const pipelineConcurrency = 1;

/** Connections the sweep resets in one turn of the event loop (see createOnePort's resetQueue). */
const resetsPerTurn = 8;

/** HTTP/2 streams a client may have open at once on one connection (gRPC's usual 100). */
const maxConcurrentStreams = 100;

/**
 * HTTP/2 streams open at once on a connection past its address's `wideSessionsPerAddress`.
 * Node builds a stream's objects as nghttp2 reads its HEADERS, all the streams a connection
 * sends in one read and all the connections read in one poll, before any of our code runs:
 * 200 connections opening 100 streams each took the event loop for 0.3-0.4 s of CPU at once
 * (bench/RESULTS.md, "Fair service under hostile clients"). A client needing more concurrency
 * than 4 x 100 streams from one address is a proxy; it opens more connections.
 */
const narrowSessionStreams = 8;

/** Options of createOnePort beyond TLS. */
export interface OnePortOptions {
  /** Timeouts; default the production ones. */
  timeouts?: Partial<Timeouts>;
  /** Connection limits; default defaultLimits. */
  limits?: Partial<ConnectionLimits>;
  /** The JSON body of the 503 that refuses a request past the pipelining bound. */
  pipelineRefusalBody?: string;
}

/** OnePort serves HTTP/1.1 and HTTP/2 on a single port with one request handler. */
export interface OnePort {
  /** The timeouts in force. */
  timeouts: Timeouts;
  /** The connection limits in force. */
  limits: ConnectionLimits;
  /** For fastify's `serverFactory`: attaches fastify's handler to both HTTP servers. */
  serverFactory: (handler: RequestHandler) => http.Server;
  /**
   * Give HTTP/2 streams to `taker` first: a stream it takes (returns true for) never becomes a
   * request of the fastify handler. Call before listening.
   */
  takeStreams(taker: StreamTaker): void;
  /** Start accepting connections. */
  listen(host: string, port: number): Promise<AddressInfo>;
  /**
   * Stop accepting, let in-flight requests finish (HTTP/2 sessions get GOAWAY; HTTP/1.1
   * answers carry `Connection: close` and idle keep-alive connections close), and cut off
   * whatever remains after `graceMs`.
   */
  close(graceMs: number): Promise<void>;
}

// Every HTTP/2 connection starts with this preface; no HTTP/1.x method starts with "PRI".
const h2Preface = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/**
 * Create the one-port server. Without TLS a plain TCP listener peeks at the first bytes of
 * each connection and hands it to the HTTP/2 server (h2c: gRPC, Connect, REST) when they
 * are the HTTP/2 preface, else to the HTTP/1.1 server (REST, Connect, gRPC-Web). With TLS,
 * ALPN makes the same choice inside one HTTP/2 server that allows HTTP/1.1.
 */
export function createOnePort(tls?: TlsOptions, opts: OnePortOptions = {}): OnePort {
  const timeouts: Timeouts = { ...defaultTimeouts, ...opts.timeouts };
  const limits: ConnectionLimits = { ...defaultLimits, ...opts.limits };
  const refusalBody =
    opts.pipelineRefusalBody ??
    JSON.stringify({ code: 14, message: "too many pipelined requests", details: [] });
  let h1: http.Server | undefined;
  let h2: http2.Http2Server | http2.Http2SecureServer | undefined;
  let listener: net.Server | undefined;
  const sockets = new Set<Duplex>();
  const perAddress = new Map<string, number>();
  /** Open HTTP/2 sessions by client address. */
  const sessionsPerAddress = new Map<string, number>();
  const sessions = new Map<http2.ServerHttp2Session, SessionWatch>();
  const h1Connections = new Map<Duplex, Pipeline>();
  /** HTTP/1.1 connections that have not asked anything yet, and since when they are open. */
  const h1Fresh = new Map<Duplex, number>();
  /** HTTP/1.1 connections whose parser is fed no further ahead than the pipelining bound. */
  const readAheads = new WeakMap<Duplex, ReadAhead>();
  /** Large HTTP/1.1 answers written a slice a turn (src/answer-slices.ts). */
  const slicedAnswers = new WeakMap<http.ServerResponse, SlicedAnswer>();
  /**
   * A new HTTP/1.1 connection, just taken by Node's server (which added `listeners`); Node
   * parses `firstBytes` (read by the dispatcher) before it reads the socket itself.
   */
  const fresh = (socket: Duplex, listeners: ServerListeners | undefined, firstBytes?: Buffer) => {
    h1Fresh.set(socket, Date.now());
    socket.once("close", () => h1Fresh.delete(socket));
    if (!listeners) return;
    const unanswered = () => {
      const p = h1Connections.get(socket);
      return p ? p.pending.size + p.waiting.length : 0;
    };
    readAheads.set(
      socket,
      boundReadAhead(
        socket,
        listeners,
        {
          room: () => limits.maxPipelinedRequests - unanswered(),
          unanswered,
          refuseNext: () => {
            pipelineOf(socket).refuseNext = true;
          },
          dropping: () => h1Connections.get(socket)?.refused === true,
          // Refused too (a bound of 1): what follows the refusal is then read and dropped.
          pipelined: () => unanswered() > 1 || h1Connections.get(socket)?.refused === true,
        },
        // Node reads the socket itself until the connection pipelines (src/read-ahead.ts).
        { firstBytes },
      ),
    );
  };
  let taker: StreamTaker | undefined;
  let shuttingDown = false;
  const fair: FairStarts = createFairStarts({
    perTurn: limits.maxStartsPerTurn,
    perAddress: limits.maxRunningPerAddress,
    bytesPerTurn: limits.answerBytesPerTurn,
  });

  /** Count a new connection, or close it at once when a connection bound is reached. */
  const admit = (socket: Duplex & { remoteAddress?: string | undefined }): boolean => {
    const address = socket.remoteAddress ?? "";
    const fromAddress = perAddress.get(address) ?? 0;
    if (sockets.size >= limits.maxConnections || fromAddress >= limits.maxConnectionsPerAddress) {
      socket.destroy();
      return false;
    }
    sockets.add(socket);
    perAddress.set(address, fromAddress + 1);
    socket.once("close", () => {
      sockets.delete(socket);
      const n = (perAddress.get(address) ?? 1) - 1;
      if (n === 0) perAddress.delete(address);
      else perAddress.set(address, n);
    });
    return true;
  };

  /** The pipeline state of an HTTP/1.1 connection, made at its first request. */
  const pipelineOf = (socket: Duplex): Pipeline => {
    let p = h1Connections.get(socket);
    if (!p) {
      h1Fresh.delete(socket);
      p = {
        pending: new Set(),
        waiting: [],
        refused: false,
        refuseNext: false,
        closing: false,
        lastDone: Date.now(),
        address: (socket as { remoteAddress?: string }).remoteAddress ?? "",
        written: 0,
      };
      h1Connections.set(socket, p);
      const pipeline = p;
      // A connection refused past the pipelining bound has every request its client pipelined
      // after the refusal parsed and left unanswered (a flood sends a thousand in one packet),
      // and one the sweep resets has those its client left unread. When it closes, Node aborts
      // each with an ECONNRESET error whose stack it captures and formats: about 1 ms a
      // request, a second of blocked event loop for a flood's connection closing
      // (bench/RESULTS.md, "Fair service under hostile clients"). Nobody listens for those
      // errors, so Node's close handling of such a connection runs with no stack traces: set
      // before Node's 'close' listener (prepended), restored after it (appended now, after
      // Node's, which was added when the connection came).
      let stackTraceLimit: number | undefined;
      socket.prependOnceListener("close", () => {
        if (!pipeline.refused && !pipeline.reset) return;
        stackTraceLimit = Error.stackTraceLimit;
        Error.stackTraceLimit = 0;
      });
      socket.once("close", () => {
        if (stackTraceLimit !== undefined) Error.stackTraceLimit = stackTraceLimit;
        h1Connections.delete(socket);
      });
    }
    return p;
  };

  /**
   * The request handler behind the HTTP/1.1 bounds: at most `pipelineConcurrency` requests of
   * a connection run at once, at most `maxPipelinedRequests` wait unanswered, and during
   * shutdown every answer closes its connection.
   */
  const bounded =
    (handler: RequestHandler): RequestHandler =>
    (req, res) => {
      if (req.httpVersionMajor !== 1) {
        handler(req, res);
        return;
      }
      const r = res as http.ServerResponse;
      const p = pipelineOf(req.socket);
      // Past the refusal the connection closes: what it still sends is left unanswered, as
      // HTTP/1.1 lets a server do, and the client sends it again on a new connection.
      if (p.refused) return;
      // A request that crossed the server's close of its connection (an answer that said
      // `Connection: close`, or the shutdown's close of an idle connection) is never run: its
      // answer could not be sent, and a change the client is told failed must not happen.
      // The client sees its reused connection reset and may send it again elsewhere.
      if (p.closing) {
        (req.socket as Socket).destroySoon();
        return;
      }
      if (p.refuseNext || p.pending.size + p.waiting.length >= limits.maxPipelinedRequests) {
        p.refused = true;
        r.shouldKeepAlive = false;
        r.writeHead(503, {
          "content-type": "application/json",
          "retry-after": "1",
          "content-length": Buffer.byteLength(refusalBody),
        });
        r.end(refusalBody);
        return;
      }
      const run = (rq: typeof req, rs: http.ServerResponse) => {
        p.pending.add(rs);
        if (shuttingDown) rs.shouldKeepAlive = false;
        rs.once("close", () => {
          p.pending.delete(rs);
          p.lastDone = Date.now();
          if (!rs.shouldKeepAlive || rq.socket.destroyed) {
            // This answer closes the connection: the requests pipelined behind it would run
            // with no way to send their answers. They are left unrun, as HTTP/1.1 allows.
            p.closing = true;
            p.waiting.length = 0;
          } else {
            // Its turn comes from the fair starts: run at once, a deep pipeline would be
            // served whole before anyone else.
            const next = p.waiting.shift();
            if (next) run(next[0], next[1]);
          }
          // Room for one more request: the parser reads what was held for lack of it.
          readAheads.get(rq.socket)?.more();
        });
        if (isProbe(rq.url)) {
          handler(rq, rs);
          return;
        }
        fair.enter(p.address, (done) => {
          // Done when its answer's head is written (what follows, a body a client may leave
          // unread or the messages of a long stream, is the stall budgets' business, not
          // work that holds a slot), or when the connection is gone (a response waiting in
          // Node's queue of a closed connection may never emit its own events). Every answer
          // writes its head through writeHead, the implicit one too.
          const socket = rq.socket;
          if (socket.destroyed) {
            done();
            return;
          }
          const finished = (answerBytes?: number) => {
            socket.off("close", gone);
            done(answerBytes);
          };
          const gone = () => finished();
          const writeHead = rs.writeHead;
          rs.writeHead = function (this: http.ServerResponse, ...args: unknown[]) {
            // The answer's size (its head's, or set before), for the fair starts' byte budget.
            const head = args.findLast(isHeaders);
            const size = contentLength(head) ?? byteCount(this.getHeader("content-length"));
            if (size !== undefined && size > limits.answerBytesPerTurn) {
              // A large answer: the start pays its first slice, each next slice its own turn.
              const address = p.address;
              slicedAnswers.set(
                this,
                sliceAnswer(
                  this,
                  limits.answerBytesPerTurn,
                  (bytes, write) => fair.send(address, bytes, write),
                  (bytes) => fair.send(address, bytes, noop),
                ),
              );
              finished(limits.answerBytesPerTurn);
            } else finished(size);
            return (writeHead as (...a: unknown[]) => http.ServerResponse).apply(this, args);
          } as typeof rs.writeHead;
          rs.once("close", gone);
          socket.once("close", gone);
          handler(rq, rs);
        });
      };
      if (p.pending.size >= pipelineConcurrency) p.waiting.push([req, r]);
      else run(req, r);
    };

  /**
   * Every second (or sooner with short timeouts): close connections whose client has left
   * answers unread above the budget for too long, and HTTP/2 connections dribbling a frame.
   */
  const tickMs = Math.max(
    10,
    Math.min(1_000, timeouts.headersTimeoutMs / 4, limits.unsentStallMs / 4),
  );
  const sweep = () => {
    const now = Date.now();
    if (shuttingDown) {
      for (const [socket, since] of h1Fresh) {
        if (now - since >= timeouts.shutdownIdleMs) socket.destroy();
      }
    }
    const stalled: Stalled[] = [];
    for (const [socket, p] of h1Connections) {
      if (p.reset) continue;
      let unsent = socket.writableLength;
      for (const res of p.pending) {
        unsent += (res as { outputSize?: number }).outputSize ?? 0;
        // What a sliced answer still holds is as unsent as what Node holds.
        unsent += slicedAnswers.get(res as http.ServerResponse)?.held() ?? 0;
      }
      // Bytes handed to the kernel: bytesWritten counts those still queued here too.
      const written = ((socket as Partial<Socket>).bytesWritten ?? 0) - socket.writableLength;
      if (overBudget(p, unsent, now) || stalledTooLong(p, unsent, written, now)) resetH1(socket, p);
      else if (p.stallSince !== undefined) {
        const requests = p.pending.size + p.waiting.length;
        // Requests read but not yet parsed are only their bytes (src/read-ahead.ts).
        const unparsed = readAheads.get(socket)?.heldBytes() ?? 0;
        stalled.push({
          held: unsent + requests * requestCostBytes + unparsed,
          address: p.address,
          reset: () => resetH1(socket, p),
        });
      } else if (
        shuttingDown &&
        p.pending.size === 0 &&
        p.waiting.length === 0 &&
        now - p.lastDone >= timeouts.shutdownIdleMs
      ) {
        // Idle for a while: its client is not about to send on it. (Node's own keep-alive
        // timeout closes such connections the same way.)
        p.closing = true;
        socket.end();
      }
    }
    for (const [session, w] of sessions) {
      if (w.reset) continue;
      let unsent = 0;
      for (const stream of w.streams) unsent += stream.writableLength;
      const sock = session.socket as Partial<Socket> | undefined;
      const written = (sock?.bytesWritten ?? 0) - (sock?.writableLength ?? 0);
      if (overBudget(w, unsent, now) || stalledTooLong(w, unsent, written, now)) {
        resetH2(session, w);
        continue;
      }
      if (w.stallSince !== undefined) {
        stalled.push({
          held: unsent + w.streams.size * requestCostBytes,
          address: w.address,
          reset: () => resetH2(session, w),
        });
      }
      // The HTTP/1.1 headers timeout, for HTTP/2: bytes that keep arriving on a connection
      // with no stream open, while no frame completes (no new stream, PING or SETTINGS), are
      // a frame dribbled in. Frames never interleave with a header block, so a client cannot
      // keep this reset while it dribbles one.
      const read = (session.socket as { bytesRead?: number } | undefined)?.bytesRead ?? 0;
      if (w.streams.size > 0) w.dribbleSince = undefined;
      else if (read > w.bytesRead) {
        w.grewAt = now;
        if (now - w.frameAt > tickMs) w.dribbleSince ??= now;
      } else if (now - w.grewAt > timeouts.headersTimeoutMs / 2) {
        // Quiet for half the timeout: what grew was a stray frame (a late WINDOW_UPDATE), not a
        // dribble, which must keep sending (a slower one is left to the idle timeout).
        w.dribbleSince = undefined;
      }
      w.bytesRead = read;
      if (w.dribbleSince !== undefined && now - w.dribbleSince >= timeouts.headersTimeoutMs) {
        session.destroy();
      }
    }
    shedStalled(stalled);
  };
  /**
   * The connections the sweep resets, in the order it chose them, reset `resetsPerTurn` a turn
   * of the event loop. Each reset costs Node its socket's close and every request and write it
   * still held, and a sweep that sheds the budgets' excess may pick hundreds at once: 1,000
   * non-readers from two addresses made one turn of 50-120 ms, a well-behaved client's call
   * waiting behind it (bench/RESULTS.md, round 9). A connection waiting here is past the
   * sweep's accounting (`reset` is set): it holds what it holds for a few turns more.
   */
  const resetQueue: (() => void)[] = [];
  let resetTurnScheduled = false;
  /** Reset a connection at its turn in resetQueue: `c` is out of the sweep's accounting now. */
  const resetSoon = (c: StallWatch, close: () => void) => {
    c.reset = true;
    resetQueue.push(close);
    if (!resetTurnScheduled) {
      resetTurnScheduled = true;
      setImmediate(resetSome);
    }
  };
  const resetSome = () => {
    resetTurnScheduled = false;
    for (const close of resetQueue.splice(0, resetsPerTurn)) close();
    if (resetQueue.length > 0) {
      resetTurnScheduled = true;
      setImmediate(resetSome);
    }
  };
  const resetH1 = (socket: Duplex, p: Pipeline) =>
    resetSoon(p, () => {
      if (!socket.destroyed) reset(socket);
    });
  const resetH2 = (session: http2.ServerHttp2Session, w: SessionWatch) =>
    resetSoon(w, () => {
      if (!session.destroyed) session.destroy();
    });
  /**
   * Whether a connection's client has read nothing of its waiting answers for too long: it
   * has answer bytes waiting, and none went out since the last sweep for `unsentStallMs`.
   * (Answers that fit in the kernel's buffers wait there, not here, and cost us nothing.)
   */
  const stalledTooLong = (c: StallWatch, unsent: number, written: number, now: number) => {
    if (unsent === 0 || written !== c.written) {
      c.stallSince = undefined;
      c.written = written;
      return false;
    }
    c.stallSince ??= now;
    return now - c.stallSince >= limits.unsentStallMs;
  };
  /**
   * Reset stalled connections, the largest first, until those of every address and all of
   * them together hold no more than their budgets: a thousand non-readers holding a little
   * each must not wait out the stall time together (issue 36: 604 MB from two addresses).
   */
  const shedStalled = (stalled: Stalled[]) => {
    let total = 0;
    const byAddress = new Map<string, number>();
    for (const c of stalled) {
      total += c.held;
      byAddress.set(c.address, (byAddress.get(c.address) ?? 0) + c.held);
    }
    if (
      total <= limits.maxStalledBytes &&
      [...byAddress.values()].every((n) => n <= limits.maxStalledBytesPerAddress)
    ) {
      return;
    }
    stalled.sort((a, b) => b.held - a.held);
    for (const c of stalled) {
      const mine = byAddress.get(c.address)!;
      if (total <= limits.maxStalledBytes && mine <= limits.maxStalledBytesPerAddress) continue;
      c.reset();
      total -= c.held;
      byAddress.set(c.address, mine - c.held);
    }
  };
  /** Whether a connection's unsent bytes have stayed above the budget for too long. */
  const overBudget = (c: { overSince?: number | undefined }, unsent: number, now: number) => {
    if (unsent <= limits.maxUnsentBytes) {
      c.overSince = undefined;
      return false;
    }
    c.overSince ??= now;
    return now - c.overSince >= limits.unsentStallMs;
  };
  let sweeper: NodeJS.Timeout | undefined;

  return {
    timeouts,
    limits,
    serverFactory(fastifyHandler) {
      const handler = bounded(fastifyHandler);
      h1 = http.createServer(
        {
          headersTimeout: timeouts.headersTimeoutMs,
          requestTimeout: timeouts.requestTimeoutMs,
          // Node checks the two timeouts above on this period (default 30 s, which would let
          // a slow client hold a connection up to 40 s against a 10 s headers timeout); a
          // quarter of the shorter one at most, so a client outlives neither by more than that.
          connectionsCheckingInterval: Math.max(
            10,
            Math.min(1_000, timeouts.headersTimeoutMs / 4, timeouts.requestTimeoutMs / 4),
          ),
          keepAliveTimeout: 5_000,
        },
        handler,
      );
      // noDelay: the TLS server listens itself, and must not let Nagle hold back small frames.
      const h2opts = { settings: { maxConcurrentStreams }, noDelay: true };
      h2 = tls
        ? http2.createSecureServer(
            {
              ...h2opts,
              cert: tls.cert,
              key: tls.key,
              allowHTTP1: true,
              ALPNProtocols: ["h2", "http/1.1"],
            },
            handler,
          )
        : http2.createServer(h2opts, handler);
      // Node's compatibility layer (the request handler's req and res) is the server's one
      // "stream" listener, added with the handler. It is put behind the stream taker, which
      // answers the streams it takes itself (the lean unary gRPC path, src/grpc/unary-grpc.ts).
      const compat = h2.listeners("stream");
      if (compat.length !== 1) {
        throw new Error("node:http2 changed: expected its compatibility layer's stream listener");
      }
      const toHandler = compat[0] as (...args: unknown[]) => void;
      h2.removeAllListeners("stream");
      // One listener and one "close" listener a stream (they were three of each: the session's
      // count of its streams, the fair start's slot, the request timeout), which every HTTP/2
      // call pays for, the lean gRPC path's included.
      h2.on("stream", (stream: http2.ServerHttp2Stream, headers, ...rest: unknown[]) => {
        const w = sessions.get(stream.session as http2.ServerHttp2Session);
        // The HTTP/1.1 request timeout, per HTTP/2 stream: a request whose body has not fully
        // arrived in time is reset (CANCEL). A session trickling bytes never idles, so without
        // this its streams would live for ever. A slow answer to a complete request is left be.
        const timer = setTimeout(cancelIncomplete, timeouts.requestTimeoutMs, stream);
        timer.unref();
        /** The fair start's slot, once the stream has one. */
        let done: (() => void) | undefined;
        if (w) {
          w.streams.add(stream);
          w.frameAt = Date.now();
          w.dribbleSince = undefined;
        }
        stream.once("close", () => {
          clearTimeout(timer);
          if (w) {
            w.streams.delete(stream);
            // The client's last WINDOW_UPDATEs for it arrive after: bytes, not a dribble.
            w.frameAt = Date.now();
          }
          done?.();
        });
        const start = () => {
          if (taker?.(stream, headers)) return;
          toHandler.call(h2, stream, headers, ...rest);
        };
        if (isProbe(headers[":path"])) {
          start();
          return;
        }
        fair.enter(w?.address ?? stream.session?.socket?.remoteAddress ?? "", (release) => {
          // Done when the answer's head is sent (what follows, a body a client may leave
          // unread or the messages of a long stream, is the stall budgets' business, not
          // work that holds a slot), or when the stream closes. A stream has no event for
          // the first: its respond is wrapped (the compatibility layer's writeHead and the
          // lean gRPC path both call it).
          const respond = stream.respond;
          stream.respond = function (this: http2.ServerHttp2Stream, ...args: unknown[]) {
            release(contentLength(args.find(isHeaders)));
            return (respond as (...a: unknown[]) => void).apply(this, args);
          } as typeof stream.respond;
          done = release;
          // A stream that waited its turn may be gone: its client reset it, or the session.
          if (stream.destroyed || stream.closed) {
            release();
            return;
          }
          start();
        });
      });
      h2.setTimeout(timeouts.idleTimeoutMs);
      h2.on("session", (session: http2.ServerHttp2Session) => {
        const w: SessionWatch = {
          streams: new Set(),
          frameAt: Date.now(),
          bytesRead: 0,
          grewAt: Date.now(),
          address: session.socket?.remoteAddress ?? "",
          written: 0,
        };
        sessions.set(session, w);
        const wide = sessionsPerAddress.get(w.address) ?? 0;
        sessionsPerAddress.set(w.address, wide + 1);
        if (wide >= limits.wideSessionsPerAddress) {
          session.settings({ maxConcurrentStreams: narrowSessionStreams });
        }
        session.once("close", () => {
          const n = (sessionsPerAddress.get(w.address) ?? 1) - 1;
          if (n === 0) sessionsPerAddress.delete(w.address);
          else sessionsPerAddress.set(w.address, n);
        });
        const frame = () => {
          w.frameAt = Date.now();
          w.dribbleSince = undefined;
        };
        session.on("ping", frame);
        session.on("remoteSettings", frame);
        // The HTTP/1.1 headers timeout, for the HTTP/2 handshake: a client whose SETTINGS
        // frame has not arrived in time is cut off. A frame announced but never completed
        // counts as no activity, and a client's end of stream goes unseen, so without this
        // such a connection lived until the idle timeout.
        const handshake = setTimeout(() => session.destroy(), timeouts.headersTimeoutMs);
        handshake.unref();
        session.once("remoteSettings", () => clearTimeout(handshake));
        session.once("close", () => {
          clearTimeout(handshake);
          sessions.delete(session);
        });
      });
      return h1;
    },

    takeStreams(t) {
      taker = t;
    },

    async listen(host, port) {
      if (!h1 || !h2) throw new Error("serverFactory was not called: build the fastify app first");
      const h1s = h1;
      const h2s = h2;
      if (tls) {
        listener = h2s as unknown as net.Server;
        // Before the TLS server's own listener (added when it was made): a connection past a
        // bound is closed before its handshake starts.
        listener.prependListener("connection", (s: Socket) => {
          admit(s);
        });
        // Node's HTTP/1.1 server takes an http/1.1 connection in the TLS server's own
        // 'secureConnection' listener: what it adds is what was added between these two.
        const before = new WeakMap<Duplex, Set<unknown>>();
        h2s.prependListener("secureConnection", (s: Duplex) => {
          before.set(s, listenersNow(s));
        });
        h2s.on("secureConnection", (s: Duplex & { alpnProtocol?: string | false }) => {
          if (s.alpnProtocol === "h2") return;
          fresh(s, serverListenersAdded(s, before.get(s) ?? new Set()));
        });
      } else {
        // noDelay, as Node's own HTTP servers set it when they listen: a response written in
        // several small pieces (HTTP/2 headers, data and trailers frames) must not wait for
        // the client's ACK of the previous one (Nagle's algorithm).
        listener = net.createServer({ noDelay: true }, (socket) => {
          if (!admit(socket)) return;
          dispatch(socket, h1s, h2s as http2.Http2Server, timeouts.headersTimeoutMs, fresh);
        });
      }
      const server = listener;
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        // The kernel's queue of connections not yet accepted holds as many as the server may
        // have open (capped by net.core.somaxconn): with Node's default of 511, a burst of a
        // thousand connections while the event loop was busy overflowed it, and a client
        // connecting then had its handshake dropped and retried 1, 3, 7 s later (bench/RESULTS.md).
        server.listen({ host, port, backlog: limits.maxConnections }, () => {
          server.off("error", reject);
          resolve();
        });
      });
      // Node's HTTP/1.1 server starts tracking connections (which enforces headersTimeout and
      // requestTimeout, and lets closeIdleConnections work) on its 'listening' event. It never
      // listens itself here (the dispatcher hands it sockets), so tell it the port is open.
      if (!tls) h1s.emit("listening");
      sweeper = setInterval(sweep, tickMs);
      sweeper.unref();
      return server.address() as AddressInfo;
    },

    async close(graceMs) {
      const server = listener;
      if (!server) return;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      shuttingDown = true;
      for (const session of sessions.keys()) session.close();
      // Answers not yet begun say `Connection: close`, and their connections close once they
      // are sent: the client knows not to send on them again.
      for (const p of h1Connections.values()) {
        for (const res of p.pending) if (!res.headersSent) res.shouldKeepAlive = false;
      }
      // Connections on which nothing was asked for a while, and keep-alive connections idle a
      // while, close now; the sweep closes the others as they fall idle. (Not Node's
      // closeIdleConnections: it also closes a connection whose answer went out a moment ago,
      // which its client may be reusing right now.)
      sweep();
      const idleSweep = setInterval(sweep, Math.max(10, Math.min(50, timeouts.shutdownIdleMs)));
      const timer = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      await closed;
      clearInterval(idleSweep);
      clearInterval(sweeper);
      clearTimeout(timer);
      // Stops the connection-checking interval; the server itself never listened.
      h1?.close(() => undefined);
    },
  };
}

/**
 * Close a connection with a TCP reset: a plain close would leave the unsent answers in the
 * kernel, trying to reach a client that does not read, for minutes.
 */
function reset(socket: Duplex): void {
  try {
    (socket as Socket).resetAndDestroy();
  } catch {
    socket.destroy();
  }
}

/** What the sweep knows of whether a connection's client reads its answers. */
interface StallWatch {
  /** The client's address, for the per-address budget. */
  address: string;
  /** The connection's bytes handed to the kernel at the last sweep. */
  written: number;
  /** Since when answers wait and none of them goes out. */
  stallSince?: number | undefined;
  /** The sweep is resetting the connection (it waits in the paced resets, or is gone). */
  reset?: boolean;
}

/** A connection found stalled by a sweep: what it holds, and how to reset it. */
interface Stalled {
  held: number;
  address: string;
  reset: () => void;
}

/** An HTTP/1.1 connection's requests: those running, those waiting their turn. */
interface Pipeline extends StallWatch {
  pending: Set<http.ServerResponse>;
  waiting: [http.IncomingMessage | http2.Http2ServerRequest, http.ServerResponse][];
  /** A request past the bound was refused: the connection closes after that answer. */
  refused: boolean;
  /**
   * The next request is past the bound: its client sent it with the bound's worth unanswered
   * before it, most of them held unparsed by src/read-ahead.ts until their turn.
   */
  refuseNext: boolean;
  /** The server is closing the connection: a request arriving now is not run. */
  closing: boolean;
  /** When its last answer was done (or it was opened). */
  lastDone: number;
  overSince?: number | undefined;
}

/** What the sweep watches on an HTTP/2 connection. */
interface SessionWatch extends StallWatch {
  streams: Set<http2.ServerHttp2Stream>;
  /** When a frame last completed (a stream opened or closed, a PING, SETTINGS). */
  frameAt: number;
  /** The socket's bytes read at the last sweep. */
  bytesRead: number;
  /** When a sweep last saw them grow. */
  grewAt: number;
  /** Since when bytes arrive with no frame completing. */
  dribbleSince?: number | undefined;
  overSince?: number | undefined;
}

const noop = () => undefined;

/** Whether a writeHead or respond argument is a headers object (not a status or a reason). */
function isHeaders(arg: unknown): arg is Record<string, unknown> | unknown[] {
  return typeof arg === "object" && arg !== null;
}

/** The content-length of `headers` (an object, or Node's flat [name, value, ...] list), if any. */
function contentLength(
  headers: Record<string, unknown> | unknown[] | undefined,
): number | undefined {
  if (!Array.isArray(headers)) return byteCount(headers?.["content-length"]);
  for (let i = 0; i + 1 < headers.length; i += 2) {
    if (String(headers[i]).toLowerCase() === "content-length") return byteCount(headers[i + 1]);
  }
  return undefined;
}

/** A content-length header's value as a number of bytes, if it is one. */
function byteCount(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** The request timeout of an HTTP/2 stream: reset it if its request has not fully arrived. */
function cancelIncomplete(stream: http2.ServerHttp2Stream): void {
  if (!stream.destroyed && !stream.state.remoteClose) {
    stream.close(http2.constants.NGHTTP2_CANCEL);
  }
}

/**
 * Health and readiness probes start at once, outside the fair starts: an orchestrator probing
 * from an address that also floods must still see the process answer. They are cheap.
 */
function isProbe(path: string | undefined): boolean {
  return path === "/healthz" || path === "/readyz";
}

/** Read until the protocol is known, then hand the socket, bytes unread, to its server. */
function dispatch(
  socket: Socket,
  h1: http.Server,
  h2: http2.Http2Server,
  timeoutMs: number,
  onH1: (socket: Socket, listeners: ServerListeners | undefined, firstBytes: Buffer) => void,
): void {
  let seen = Buffer.alloc(0);
  // A deadline, not an idle timeout: a client dribbling the HTTP/2 preface one byte at a time
  // would otherwise reset it with every byte and hold the connection forever.
  const deadline = setTimeout(() => socket.destroy(), timeoutMs);
  socket.once("close", () => clearTimeout(deadline));
  const onData = (chunk: Buffer) => {
    seen = Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, h2Preface.length);
    const isH2 = seen.subarray(0, n).equals(h2Preface.subarray(0, n));
    if (isH2 && seen.length < h2Preface.length) return; // a prefix of the preface: wait
    socket.off("data", onData);
    socket.pause();
    clearTimeout(deadline);
    socket.unshift(seen);
    if (isH2) {
      // The HTTP/2 session reads the unshifted preface itself and then consumes the native
      // handle; resuming the JS stream here would steal bytes from it (GOAWAY, code 2).
      h2.emit("connection", socket);
    } else {
      const before = listenersNow(socket);
      h1.emit("connection", socket);
      onH1(socket, serverListenersAdded(socket, before), seen);
      socket.resume();
    }
  };
  socket.on("data", onData);
  socket.on("error", () => socket.destroy());
}
