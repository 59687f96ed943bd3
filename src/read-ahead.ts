import type { Duplex } from "node:stream";

/**
 * What bounds how far Node's HTTP/1.1 parser reads ahead on one connection (see
 * boundReadAhead).
 */
export interface ReadAheadBounds {
  /**
   * Requests the parser may still read now: the pipelining bound less the connection's
   * requests read and not yet answered. At 0 or below, one request more is handed over, so
   * that the one past the bound is seen (and refused) as before.
   */
  room(): number;
  /** The connection's requests read by the parser and not yet answered. */
  unanswered(): number;
  /**
   * The request the parser reads next is past the bound: the client sent it while the bound's
   * worth of requests before it were unanswered, most of them still held here unread by the
   * parser (see boundReadAhead). Refuse it as if it had been read with them.
   */
  refuseNext(): void;
  /** Whether what the client sends now is read and dropped (its connection was refused). */
  dropping(): boolean;
  /**
   * Whether the connection has pipelined: more than one of its requests read and unanswered
   * (asked right after a request was emitted; see boundReadAhead's `nativeUntilPipelined`).
   */
  pipelined(): boolean;
}

/** A connection whose parser is fed by boundReadAhead. */
export interface ReadAhead {
  /** An answer is done: hand the parser what was held for lack of room. */
  more(): void;
  /** Whether the connection is read the bounded way now (not by Node's parser itself). */
  isBounded(): boolean;
  /** Bytes the client sent that are held here, not yet handed to the parser. */
  heldBytes(): number;
}

/**
 * Requests of a pipelining connection that the parser reads ahead of their answers while the
 * requests behind them are bodiless heads (see boundReadAhead): the one that runs, and the
 * next, ready when it is done.
 */
export const parsedAhead = 2;

/**
 * Bytes held unread by the parser beyond which a connection whose requests are bodiless heads
 * is not read further until some are parsed: 64 heads of 1 KiB, about what the old way held
 * (a read's chunk, and a head in the parser). A pipeline of larger heads within the bound is
 * then read as its answers go, and one past it may be answered rather than refused; either
 * way what one connection holds stays bounded.
 */
const maxHeldHeadBytes = 64 * 1024;

/** Node's net.Socket, with the flag its HTTP server sets while it waits for answers to drain. */
type ServerSocket = Duplex & { _paused?: boolean; parser?: unknown };

/**
 * What of Node's HTTP/1.1 parser (node:_http_common's HTTPParser, a C++ object) the native
 * read path relies on: `_consumed` says the parser reads the socket's handle itself; `onIncoming`
 * is called with each request's head, inside the parser's run over a chunk, and what it returns
 * goes back to llhttp; the function at index `constructor.kOnExecute` is called after each chunk
 * the parser read itself, with the bytes it parsed or its error.
 */
interface NodeParser {
  _consumed?: boolean;
  onIncoming?: (req: unknown, keepAlive: boolean) => number;
  resume?: () => void;
  getCurrentBuffer?: () => Buffer;
  constructor: { kOnExecute?: unknown };
  [index: number]: unknown;
}

/** llhttp's HPE_PAUSED: returned from a head's callback, the parser stops just after that head. */
const hpePaused = 21;

const headEnd = Buffer.from("\r\n\r\n");
const noBytes = Buffer.alloc(0);

/**
 * Bound how far Node's HTTP/1.1 parser reads ahead on one connection: once the connection
 * pipelines, its bytes are handed to the parser only as far as the pipelining bound allows,
 * the rest held (and the socket paused) until earlier answers are done.
 *
 * Node parses every request of a chunk it is given in one go, building an IncomingMessage
 * and a ServerResponse for each before any of our code can say no; a flood of 50 connections
 * pipelining 1,000 requests in a packet each was 50,000 of them in one poll of the event loop,
 * 16-40x a control call's server CPU (bench/RESULTS.md, "Fair service under hostile clients").
 * Node's parser cannot be paused from inside a request callback (its pause() takes effect
 * once the chunk is parsed), so the bytes are cut before it sees them: after as many header ends ("\r\n\r\n") as the bound leaves room for. That count
 * only decides where a chunk is cut; whether a request is past the bound is still decided on
 * what Node parsed (a body holding "\r\n\r\n" only cuts a chunk in two). It cannot deadlock:
 * bytes are held only while the connection has `room() <= 0` requests parsed and unanswered,
 * and the bodies of all but the last of those were handed over before the next one's head.
 *
 * Bodiless heads go further: while everything a connection pipelined is heads with no body
 * (no Content-Length, Transfer-Encoding or Upgrade, not CONNECT), whole heads are handed
 * over one at a time, no more than `parsedAhead` unanswered; the others wait here as bytes.
 * A parsed request lives until its answer is done: 64 of them behind 269 kB answers lived
 * 0.2-0.5 s, long enough for V8 to copy each twice and move it to the old generation, whose
 * collections then paused every client (bench/RESULTS.md, round 10). Such heads can be counted
 * exactly from the bytes (no body can hold a "\r\n\r\n" between them), so the bound holds as
 * before: the connection is read on while what it sent is within the bound, and once the head
 * past it is held, what follows is dropped and that head is refused (`refuseNext`) when the
 * parser reaches it, after the answers before it. The first head with a body, or one left
 * incomplete when nothing else is waiting, goes to the parser the old way, and the connection
 * is read the old way from then on.
 *
 * Feeding the parser from a JS 'data' listener costs every call: Node otherwise has the parser
 * read the socket's handle in C++, and a REST GetGroup took 12 us more of server CPU the JS way
 * (113 -> 125 us, bench/RESULTS.md). So, with `nativeUntilPipelined`, a connection keeps Node's
 * own read path until it pipelines: until a request's head is parsed while an earlier request of
 * the connection is unanswered (`bounds.pipelined()`). There the parser is stopped right after
 * that head (llhttp's pause, returned from the head's callback), the rest of the chunk is taken
 * from it, and the connection is read the bounded way from then on. A flood therefore costs at
 * most the requests of the bound whichever way it comes, in its first packet or after calls
 * that behaved. Node's own path is kept only where this is known to hold: the parser reads the
 * handle itself, and the bytes Node already read the JS way (`firstBytes`, the dispatcher's
 * peek) hold at most one request's head, so no second head is ever parsed outside it.
 *
 * Call it right after the HTTP server took the socket, with the 'data' and 'end' listeners the
 * server added: once bounded, they are taken off the socket and called from here. (Adding a
 * 'data' listener makes Node's server stop reading the socket's handle itself.)
 */
export function boundReadAhead(
  socket: ServerSocket,
  serverListeners: ServerListeners,
  bounds: ReadAheadBounds,
  nativeUntilPipelined?: { firstBytes?: Buffer | undefined },
): ReadAhead {
  const parser = socket.parser;
  let held: Buffer | undefined;
  let ended = false;
  let feeding = false;
  let bounded = false;
  /**
   * Whether every request handed to the parser since the connection was bounded was a whole
   * bodiless head: the parser is between requests, and `held` starts at the next one.
   */
  let heads = true;
  /** The lengths of the whole bodiless heads that lead `held` (counted as far as needed). */
  const counted: number[] = [];
  /** Bytes of `held` those heads take. */
  let countedBytes = 0;
  /** The head after the counted ones has a body: no further head is counted. */
  let bodyNext = false;
  /** The last counted head is past the bound: it is refused, and what follows is dropped. */
  let refusing = false;
  /**
   * The parser was stopped right after a bodiless request's head (nativeUntilPipelined): its
   * end is seen only when the parser runs again, which the old way did at once with the rest.
   */
  let unfinished = false;

  /** Count the bodiless heads leading `held` until there are `k`, or no further whole one. */
  const count = (k: number) => {
    while (held !== undefined && !bodyNext && counted.length < k) {
      let from = countedBytes;
      // Blank lines before a request line are allowed (and skipped by the parser).
      while (from < held.length && (held[from] === 13 || held[from] === 10)) from++;
      const at = held.indexOf(headEnd, from);
      if (at < 0) return;
      const end = at + headEnd.length;
      if (!bodiless(held, from, at)) {
        bodyNext = true;
        return;
      }
      counted.push(end - countedBytes);
      countedBytes = end;
    }
  };

  /** Hand the parser the first `n` bytes of `held`, keeping the rest. */
  const handOver = (n: number) => {
    const all = n === held!.length;
    const slice = all ? held! : held!.subarray(0, n);
    held = all ? undefined : held!.subarray(n);
    serverListeners.data(slice);
  };

  /** Hand the parser the first of the counted heads (refused if it is the one past the bound). */
  const feedHead = () => {
    const n = counted.shift()!;
    countedBytes -= n;
    if (refusing && n === held!.length) bounds.refuseNext();
    handOver(n);
  };

  /** Hand the parser what `held` has room for the old way; the connection stays that way. */
  const feedOldWay = (): boolean => {
    const room = bounds.room();
    const n = room > 0 ? afterHeads(held!, room, held!.length) : afterHeads(held!, 1, 0);
    if (n === 0) return false;
    heads = false;
    counted.length = 0;
    countedBytes = 0;
    handOver(n);
    return true;
  };

  const feed = () => {
    if (feeding || !bounded) return;
    feeding = true;
    try {
      if (unfinished && !socket._paused && !socket.destroyed && socket.parser === parser) {
        // A run over no bytes ends it (its 'end', which a handler reading the body waits for).
        unfinished = false;
        serverListeners.data(noBytes);
      }
      while (held !== undefined) {
        // The connection is gone, upgraded (the parser freed), or refused: nothing more to parse.
        if (socket.destroyed || socket.parser !== parser || bounds.dropping()) {
          held = undefined;
          break;
        }
        // Node paused the connection until its queued answers drain; its 'resume' calls again.
        if (socket._paused) break;
        if (!heads) {
          if (!feedOldWay()) break;
          continue;
        }
        const room = bounds.room();
        count(Math.max(room, 0) + 1);
        if (counted.length > 0) {
          if (!refusing && counted.length > room) {
            // The head past the bound is held: it is the last this connection is read for.
            counted.length = Math.max(room, 0) + 1;
            countedBytes = counted.reduce((a, b) => a + b, 0);
            held = held.subarray(0, countedBytes);
            refusing = true;
          }
          if (bounds.unanswered() >= parsedAhead) break;
          feedHead();
          continue;
        }
        if (!bodyNext && isBlank(held)) {
          // Blank lines only: the parser skips them, and stays between requests.
          handOver(held.length);
          break;
        }
        // A head with a body leads, or one not yet whole: the old way, but an incomplete head
        // waits for its rest while a request is in progress (the parser owns its timeout from
        // when it is handed over).
        if (!bodyNext && bounds.unanswered() > 0) break;
        if (!feedOldWay()) break;
      }
    } finally {
      feeding = false;
    }
    if (held !== undefined) {
      const readOn =
        refusing ||
        (heads && !bodyNext && counted.length <= bounds.room() && held.length <= maxHeldHeadBytes);
      // The client's next bytes wait in the kernel (TCP flow control), not here; or, while
      // what is held is bodiless heads within the bound, they are read to count them.
      if (!readOn) {
        if (!socket.isPaused()) socket.pause();
      } else if (socket.isPaused() && !socket._paused && !socket.destroyed) socket.resume();
    } else {
      if (socket.isPaused() && !socket._paused && !socket.destroyed) socket.resume();
      // The client's end, seen while bytes before it were held, once they are all parsed.
      if (ended && socket.parser === parser && !socket.destroyed) {
        ended = false;
        serverListeners.end();
      }
    }
  };

  /** Read the connection the bounded way from now on, `rest` (bytes not yet parsed) first. */
  const bound = (rest?: Buffer) => {
    bounded = true;
    if (rest !== undefined && rest.length > 0) held = rest;
    socket.removeListener("data", serverListeners.data);
    socket.removeListener("end", serverListeners.end);
    // Through the socket's own `on`, which Node's server wraps: it stops the parser reading the
    // handle (unconsume), and the handle's bytes come to this listener instead.
    socket.on("data", (chunk: Buffer) => {
      if (bounds.dropping() || refusing) return;
      held = held === undefined ? chunk : Buffer.concat([held, chunk]);
      feed();
    });
    socket.on("end", () => {
      if (held === undefined) serverListeners.end();
      else ended = true;
    });
    // Node resumes a connection whose answers drained; what is held goes first.
    socket.on("resume", feed);
  };

  const readAhead: ReadAhead = {
    more: feed,
    isBounded: () => bounded,
    heldBytes: () => held?.length ?? 0,
  };
  if (!(nativeUntilPipelined && keepNative(socket, parser, nativeUntilPipelined.firstBytes))) {
    bound();
    return readAhead;
  }
  const p = parser as NodeParser;
  const onIncoming = p.onIncoming!;
  const kOnExecute = p.constructor.kOnExecute as number;
  const onExecute = p[kOnExecute] as (this: unknown, ret: unknown) => unknown;
  /** The parser was told to stop after the head it just parsed: the connection pipelines. */
  let stopped = false;
  p.onIncoming = function (this: unknown, req, keepAlive) {
    const r = onIncoming.call(this, req, keepAlive);
    // 0: an ordinary request (not an upgrade), which Node has now emitted.
    if (r !== 0 || bounded || stopped || !bounds.pipelined()) return r;
    stopped = true;
    // The rest of the chunk starts with this request's body, if it has one.
    heads = bodilessRequest(req);
    unfinished = heads;
    return hpePaused;
  };
  p[kOnExecute] = function (this: unknown, ret: unknown) {
    if (!stopped) return onExecute.call(this, ret);
    stopped = false;
    const parsed = (ret as { code?: unknown; bytesParsed?: unknown }) ?? {};
    if (!(ret instanceof Error) || parsed.code !== "HPE_PAUSED") {
      // Not the stop asked for (a parse error came first): Node handles it as always.
      return onExecute.call(this, ret);
    }
    const at = Number(parsed.bytesParsed);
    // A copy of the chunk the parser read: what follows the head it stopped at is the rest.
    const rest = p.getCurrentBuffer!().subarray(at);
    p.resume!();
    // Node's bookkeeping of a chunk read (its timeouts, its own pause), as if it ended there.
    const out = onExecute.call(this, at);
    bound(rest);
    // Not from inside the parser's read of the handle: the parser runs again in feed().
    process.nextTick(feed);
    return out;
  };
  return readAhead;
}

/**
 * Whether a connection may keep Node's own read path until it pipelines (see boundReadAhead):
 * its parser reads the handle itself and has what this module relies on, and what Node will
 * parse from the JS side first (bytes already read: `firstBytes`) holds one head at most.
 */
function keepNative(socket: Duplex, parser: unknown, firstBytes: Buffer | undefined): boolean {
  const p = parser as NodeParser | undefined;
  if (!p?._consumed) return false;
  if (typeof p.onIncoming !== "function" || typeof p.resume !== "function") return false;
  if (typeof p.getCurrentBuffer !== "function") return false;
  const k = p.constructor.kOnExecute;
  if (typeof k !== "number" || typeof p[k] !== "function") return false;
  if (socket.readableLength > (firstBytes?.length ?? 0)) return false;
  return firstBytes === undefined || afterHeads(firstBytes, 2, 0) === 0;
}

/** The 'data' and 'end' listeners an HTTP server adds to a socket it takes. */
export interface ServerListeners {
  data: (chunk: Buffer) => void;
  end: () => void;
}

/** The 'data' and 'end' listeners of `socket` now, to tell later which ones were added. */
export function listenersNow(socket: Duplex): Set<unknown> {
  return new Set([...socket.listeners("data"), ...socket.listeners("end")]);
}

/**
 * The one 'data' and one 'end' listener added to `socket` since `before` (listenersNow):
 * Node's HTTP server's, once it took the socket. Undefined if Node added others (a Node that
 * changed how it reads): the connection is then read by Node as it is, unbounded.
 */
export function serverListenersAdded(
  socket: Duplex,
  before: Set<unknown>,
): ServerListeners | undefined {
  const data = socket.listeners("data").filter((l) => !before.has(l));
  const end = socket.listeners("end").filter((l) => !before.has(l));
  if (data.length !== 1 || end.length !== 1) return undefined;
  return { data: data[0] as ServerListeners["data"], end: end[0] as ServerListeners["end"] };
}

/**
 * The offset just past the `k`-th header end in `buf`, or `fewer` when it holds fewer than
 * `k` of them.
 */
function afterHeads(buf: Buffer, k: number, fewer: number): number {
  let from = 0;
  for (let i = 0; i < k; i++) {
    const at = buf.indexOf(headEnd, from);
    if (at < 0) return fewer;
    from = at + headEnd.length;
  }
  return from;
}

/**
 * Whether the head in `buf` from `from` to `end` (its "\r\n\r\n") is a request with no body
 * after it and no other protocol: no Content-Length, Transfer-Encoding or Upgrade header, not
 * CONNECT. Header names are matched however they are cased, and a name only near one of these
 * counts as one (the head then goes the old way, as every head did before).
 */
function bodiless(buf: Buffer, from: number, end: number): boolean {
  const head = buf.toString("latin1", from, end).toLowerCase();
  return !head.startsWith("connect ") && !bodyHeader.test(head);
}

const bodyHeader = /\n(?:content-length|transfer-encoding|upgrade)[ \t]*:/;

/** What bodiless() says of a head, for a request Node parsed: its headers name no body. */
function bodilessRequest(req: unknown): boolean {
  const r = req as { method?: string; headers?: Record<string, unknown> };
  const h = r.headers ?? {};
  return (
    r.method !== "CONNECT" &&
    h["content-length"] === undefined &&
    h["transfer-encoding"] === undefined &&
    h.upgrade === undefined
  );
}

/** Whether `buf` holds nothing but CR and LF bytes (blank lines). */
function isBlank(buf: Buffer): boolean {
  for (let i = 0; i < buf.length; i++) if (buf[i] !== 13 && buf[i] !== 10) return false;
  return true;
}
