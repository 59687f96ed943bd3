import http from "node:http";
import http2 from "node:http2";
import net, { type AddressInfo, type Socket } from "node:net";
import type { Duplex } from "node:stream";

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
}

const defaultTimeouts: Timeouts = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 65_000,
};

/** OnePort serves HTTP/1.1 and HTTP/2 on a single port with one request handler. */
export interface OnePort {
  /** The timeouts in force. */
  timeouts: Timeouts;
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
   * Stop accepting, let in-flight requests finish (HTTP/2 sessions get GOAWAY, idle
   * HTTP/1.1 connections close), and cut off whatever remains after `graceMs`.
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
export function createOnePort(tls?: TlsOptions, overrides: Partial<Timeouts> = {}): OnePort {
  const timeouts: Timeouts = { ...defaultTimeouts, ...overrides };
  let h1: http.Server | undefined;
  let h2: http2.Http2Server | http2.Http2SecureServer | undefined;
  let listener: net.Server | undefined;
  const sockets = new Set<Duplex>();
  const sessions = new Set<http2.ServerHttp2Session>();
  let taker: StreamTaker | undefined;

  const track = (socket: Duplex) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };

  return {
    timeouts,
    serverFactory(handler) {
      h1 = http.createServer(
        {
          headersTimeout: timeouts.headersTimeoutMs,
          requestTimeout: timeouts.requestTimeoutMs,
          // Node checks the two timeouts above on this period (default 30 s, which would let
          // a slow client hold a connection up to 40 s against a 10 s headers timeout).
          connectionsCheckingInterval: Math.min(1_000, timeouts.headersTimeoutMs),
          keepAliveTimeout: 5_000,
        },
        handler,
      );
      // noDelay: the TLS server listens itself, and must not let Nagle hold back small frames.
      const h2opts = { settings: { maxConcurrentStreams: 250 }, noDelay: true };
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
      h2.on("stream", (stream: http2.ServerHttp2Stream, headers, ...rest: unknown[]) => {
        if (taker?.(stream, headers)) return;
        toHandler.call(h2, stream, headers, ...rest);
      });
      h2.setTimeout(timeouts.idleTimeoutMs);
      // The HTTP/1.1 request timeout, per HTTP/2 stream: a request whose body has not fully
      // arrived in time is reset (CANCEL). A session trickling bytes never idles, so without
      // this its streams would live for ever. A slow answer to a complete request is left be.
      h2.on("stream", (stream: http2.ServerHttp2Stream) => {
        const timer = setTimeout(() => {
          if (!stream.destroyed && !stream.state.remoteClose) {
            stream.close(http2.constants.NGHTTP2_CANCEL);
          }
        }, timeouts.requestTimeoutMs);
        timer.unref();
        stream.once("close", () => clearTimeout(timer));
      });
      h2.on("session", (session: http2.ServerHttp2Session) => {
        sessions.add(session);
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
        listener.on("connection", (s: Duplex) => track(s));
      } else {
        // noDelay, as Node's own HTTP servers set it when they listen: a response written in
        // several small pieces (HTTP/2 headers, data and trailers frames) must not wait for
        // the client's ACK of the previous one (Nagle's algorithm).
        listener = net.createServer({ noDelay: true }, (socket) => {
          track(socket);
          dispatch(socket, h1s, h2s as http2.Http2Server, timeouts.headersTimeoutMs);
        });
      }
      const server = listener;
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen({ host, port }, () => {
          server.off("error", reject);
          resolve();
        });
      });
      // Node's HTTP/1.1 server starts tracking connections (which enforces headersTimeout and
      // requestTimeout, and lets closeIdleConnections work) on its 'listening' event. It never
      // listens itself here (the dispatcher hands it sockets), so tell it the port is open.
      if (!tls) h1s.emit("listening");
      return server.address() as AddressInfo;
    },

    async close(graceMs) {
      const server = listener;
      if (!server) return;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const session of sessions) session.close();
      h1?.closeIdleConnections();
      // Keep-alive connections that become idle after their last response close too.
      const idleSweep = setInterval(() => h1?.closeIdleConnections(), 50);
      const timer = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      await closed;
      clearInterval(idleSweep);
      clearTimeout(timer);
      // Stops the connection-checking interval; the server itself never listened.
      h1?.close(() => undefined);
    },
  };
}

/** Read until the protocol is known, then hand the socket, bytes unread, to its server. */
function dispatch(socket: Socket, h1: http.Server, h2: http2.Http2Server, timeoutMs: number): void {
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
      h1.emit("connection", socket);
      socket.resume();
    }
  };
  socket.on("data", onData);
  socket.on("error", () => socket.destroy());
}
