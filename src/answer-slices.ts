import type http from "node:http";

/**
 * An HTTP/1.1 answer whose body is written a slice at a time (see sliceAnswer): what it still
 * holds that is not yet handed to Node.
 */
export interface SlicedAnswer {
  /** Body bytes held here, not yet written to the response. */
  held(): number;
}

/**
 * Write a large answer's body a slice at a time: `end(body)` writes its first `sliceBytes` at
 * once (the start that wrote the head was charged for them) and each next slice once the
 * previous one has drained into the connection and `turn` says it is the address's turn (the
 * fair starts' `send`, which charges the address the slice's bytes). A body written with
 * `write()` instead (a stream piped in) goes as written; what it writes past the first slice
 * is charged with `charge`, as the whole answer was before.
 *
 * Why: Node writes an answer's body with one `writev`, which for a 269 kB file took 1-10 ms
 * on a loaded machine (the loopback copy and its receive path run in it), a quarter of the
 * server's time under a pipelined flood; no fair turn could split it, so every other client
 * waited for whole answers (bench/RESULTS.md, "Fair service under hostile clients"). A client
 * that reads nothing now gets one slice past what its connection's buffers hold, not the
 * whole answer; the rest stays a reference here (`held`, which the stall budgets count).
 *
 * Call it from the response's writeHead, for an answer whose head says a content-length over
 * `sliceBytes` (without one, splitting `end` would change the framing).
 */
export function sliceAnswer(
  res: http.ServerResponse,
  sliceBytes: number,
  turn: (bytes: number, write: () => void) => void,
  charge: (bytes: number) => void,
): SlicedAnswer {
  const write = res.write;
  const end = res.end;
  /** Body bytes written with no charge of their own: the first slice's, charged at the start. */
  let allowance = sliceBytes;
  let body: Buffer | undefined;
  let at = 0;

  res.write = function (this: http.ServerResponse, chunk: unknown, ...rest: unknown[]) {
    if (body !== undefined) {
      // Written after end, while its slices go out: Node would fail such a write (its answer
      // is ended); here it would land between slices, so the answer is cut off instead.
      this.destroy(new Error("write after end"));
      return false;
    }
    const n = bodyLength(chunk, rest[0]);
    if (n > allowance) charge(n - allowance);
    allowance = Math.max(0, allowance - n);
    return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof res.write;

  res.end = function (this: http.ServerResponse, chunk?: unknown, ...rest: unknown[]) {
    // Ended already, its slices going out: a second end does nothing, as Node's does.
    if (body !== undefined) return this;
    const encoding = typeof rest[0] === "string" ? (rest[0] as BufferEncoding) : undefined;
    const n = bodyLength(chunk, encoding);
    if (n <= allowance || this.destroyed || this.writableEnded) {
      return (end as (...a: unknown[]) => http.ServerResponse).call(this, chunk, ...rest);
    }
    const callback = rest.find((r) => typeof r === "function") as (() => void) | undefined;
    const all = typeof chunk === "string" ? Buffer.from(chunk, encoding) : toBuffer(chunk);
    body = all;
    const next = (bytes: number) => {
      // The connection is gone: the rest is dropped (Node's end would have dropped it too).
      if (this.destroyed) {
        body = undefined;
        return;
      }
      const slice = all.subarray(at, at + bytes);
      at += slice.length;
      if (at >= all.length) {
        body = undefined;
        (end as (...a: unknown[]) => http.ServerResponse).call(this, slice, callback);
        return;
      }
      const ask = () => {
        const m = Math.min(sliceBytes, all.length - at);
        turn(m, () => next(m));
      };
      if ((write as (c: Buffer) => boolean).call(this, slice)) ask();
      else this.once("drain", ask);
    };
    const first = Math.min(allowance, all.length);
    allowance = 0;
    if (first > 0) next(first);
    else turn(Math.min(sliceBytes, all.length), () => next(Math.min(sliceBytes, all.length)));
    return this;
  } as typeof res.end;

  return { held: () => (body ? body.length - at : 0) };
}

/** The bytes of a body chunk given to write or end (none for a callback or nothing). */
function bodyLength(chunk: unknown, encoding: unknown): number {
  if (typeof chunk === "string") {
    return Buffer.byteLength(
      chunk,
      typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8",
    );
  }
  if (chunk instanceof Uint8Array) return chunk.byteLength;
  return 0;
}

/** A Uint8Array as a Buffer over the same bytes. */
function toBuffer(chunk: unknown): Buffer {
  const u = chunk as Uint8Array;
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}
