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
  /** Whether what the client sends now is read and dropped (its connection was refused). */
  dropping(): boolean;
}

/** A connection whose parser is fed by boundReadAhead. */
export interface ReadAhead {
  /** An answer is done: hand the parser what was held for lack of room. */
  more(): void;
}

/** Node's net.Socket, with the flag its HTTP server sets while it waits for answers to drain. */
type ServerSocket = Duplex & { _paused?: boolean; parser?: unknown };

const headEnd = Buffer.from("\r\n\r\n");

/**
 * Hand Node's HTTP/1.1 parser a connection's bytes only as far as the pipelining bound
 * allows, holding the rest (and pausing the socket) until earlier answers are done.
 *
 * Node parses every request of a chunk it is given in one go, building an IncomingMessage
 * and a ServerResponse for each before any of our code can say no; a flood of 50 connections
 * pipelining 1,000 requests in a packet each was 50,000 of them in one poll of the event loop,
 * 16-40x a control call's server CPU (bench/RESULTS.md, "Fair service under hostile clients").
 * Node's parser cannot be paused from inside a request callback, so the bytes are cut before
 * it sees them: after as many header ends ("\r\n\r\n") as the bound leaves room for. That count
 * only decides where a chunk is cut; whether a request is past the bound is still decided on
 * what Node parsed (a body holding "\r\n\r\n" only cuts a chunk in two). It cannot deadlock:
 * bytes are held only while the connection has `room() <= 0` requests parsed and unanswered,
 * and the bodies of all but the last of those were handed over before the next one's head.
 *
 * Call it right after the HTTP server took the socket, with the 'data' and 'end' listeners the
 * server added: they are taken off the socket and called from here. (Adding a 'data' listener
 * makes Node's server stop reading the socket's handle itself, which it otherwise does in C++.)
 */
export function boundReadAhead(
  socket: ServerSocket,
  serverListeners: ServerListeners,
  bounds: ReadAheadBounds,
): ReadAhead {
  const parser = socket.parser;
  socket.removeListener("data", serverListeners.data);
  socket.removeListener("end", serverListeners.end);
  let held: Buffer | undefined;
  let ended = false;
  let feeding = false;

  const feed = () => {
    if (feeding) return;
    feeding = true;
    try {
      while (held !== undefined) {
        // The connection is gone, upgraded (the parser freed), or refused: nothing more to parse.
        if (socket.destroyed || socket.parser !== parser || bounds.dropping()) {
          held = undefined;
          break;
        }
        // Node paused the connection until its queued answers drain; its 'resume' calls again.
        if (socket._paused) break;
        const room = bounds.room();
        const n = room > 0 ? afterHeads(held, room, held.length) : afterHeads(held, 1, 0);
        if (n === 0) break;
        const slice = n === held.length ? held : held.subarray(0, n);
        held = n === held.length ? undefined : held.subarray(n);
        serverListeners.data(slice);
      }
    } finally {
      feeding = false;
    }
    if (held !== undefined) {
      // The client's next bytes wait in the kernel (TCP flow control), not here.
      if (!socket.isPaused()) socket.pause();
    } else {
      if (socket.isPaused() && !socket._paused && !socket.destroyed) socket.resume();
      // The client's end, seen while bytes before it were held, once they are all parsed.
      if (ended && socket.parser === parser && !socket.destroyed) {
        ended = false;
        serverListeners.end();
      }
    }
  };

  socket.on("data", (chunk: Buffer) => {
    if (bounds.dropping()) return;
    held = held === undefined ? chunk : Buffer.concat([held, chunk]);
    feed();
  });
  socket.on("end", () => {
    if (held === undefined) serverListeners.end();
    else ended = true;
  });
  // Node resumes a connection whose answers drained; what is held goes first.
  socket.on("resume", feed);
  return { more: feed };
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
