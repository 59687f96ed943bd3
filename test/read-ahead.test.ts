import http from "node:http";
import type { AddressInfo } from "node:net";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import {
  boundReadAhead,
  listenersNow,
  parsedAhead,
  type ReadAhead,
  serverListenersAdded,
} from "../src/read-ahead.js";

// The HTTP/1.1 read-ahead bound of src/read-ahead.ts on a bare node:http server: a connection
// keeps Node's own read path (the parser reading the socket itself) until it pipelines, and is
// bounded from the request that pipelines on, however it behaved before. The handler refuses
// the request past the bound as src/one-port.ts does (503, the connection closed after it).

const bound = 8;

interface Harness {
  port: number;
  /** Every request the server's parser emitted, by path, in order. */
  seen: string[];
  /** Whether the connection was read the bounded way when each request was emitted. */
  boundedAt: boolean[];
  /** Answers held (the handler answers none while `hold` is set). */
  held: http.ServerResponse[];
  hold: boolean;
  /** The most requests of one connection the parser had emitted and not yet answered. */
  mostUnanswered: number;
  close(): Promise<void>;
}

let open: Harness | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

/** A server whose connections go through boundReadAhead, answering each path with itself. */
async function harness(): Promise<Harness> {
  const unanswered = new Map<net.Socket, Set<http.ServerResponse>>();
  const refused = new WeakSet<net.Socket>();
  const refuseNext = new WeakSet<net.Socket>();
  const readAheads = new WeakMap<net.Socket, ReadAhead>();
  const pendingOf = (s: net.Socket) => {
    let set = unanswered.get(s);
    if (!set) {
      set = new Set();
      unanswered.set(s, set);
    }
    return set;
  };
  const h: Harness = {
    port: 0,
    seen: [],
    boundedAt: [],
    held: [],
    hold: false,
    mostUnanswered: 0,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  const server = http.createServer((req, res) => {
    const socket = req.socket;
    h.seen.push(req.url ?? "");
    h.boundedAt.push(readAheads.get(socket)?.isBounded() ?? false);
    if (refused.has(socket)) return;
    const pending = pendingOf(socket);
    if (refuseNext.has(socket) || pending.size >= bound) {
      refused.add(socket);
      res.shouldKeepAlive = false;
      res.writeHead(503, { "content-length": 0 }).end();
      return;
    }
    pending.add(res);
    h.mostUnanswered = Math.max(h.mostUnanswered, pending.size);
    res.once("close", () => {
      pending.delete(res);
      readAheads.get(socket)?.more();
    });
    const body: Buffer[] = [];
    req.on("data", (c: Buffer) => body.push(c));
    req.on("end", () => {
      const answer = () => res.end(`${req.url} ${Buffer.concat(body).toString("latin1")}|`);
      if (h.hold) h.held.push(Object.assign(res, { answer }));
      else answer();
    });
  });
  const before = new WeakMap<net.Socket, Set<unknown>>();
  server.prependListener("connection", (s: net.Socket) => before.set(s, listenersNow(s)));
  server.on("connection", (s: net.Socket) => {
    const listeners = serverListenersAdded(s, before.get(s)!);
    if (!listeners) throw new Error("Node's HTTP server added other listeners");
    readAheads.set(
      s,
      boundReadAhead(
        s,
        listeners,
        {
          room: () => bound - pendingOf(s).size,
          unanswered: () => pendingOf(s).size,
          refuseNext: () => refuseNext.add(s),
          dropping: () => refused.has(s),
          pipelined: () => pendingOf(s).size > 1,
        },
        {},
      ),
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  h.port = (server.address() as AddressInfo).port;
  open = h;
  return h;
}

/** A raw client connection: what it has read so far, and a wait for a condition on it. */
async function client(port: number) {
  const socket = net.connect(port, "127.0.0.1");
  await new Promise<void>((r) => socket.once("connect", () => r()));
  const c = {
    socket,
    text: "",
    closed: false,
    async until(ok: () => boolean) {
      for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
      expect(ok()).toBe(true);
    },
  };
  socket.on("data", (d: Buffer) => {
    c.text += d.toString("latin1");
  });
  socket.on("error", () => undefined);
  socket.once("close", () => {
    c.closed = true;
  });
  return c;
}

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
const answers = (text: string, status: number) => text.split(`HTTP/1.1 ${status} `).length - 1;

describe("read-ahead", () => {
  it("keeps Node's own read path for a client that asks one call at a time", async () => {
    const h = await harness();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let i = 0; i < 20; i++) {
        const body = await new Promise<string>((resolve, reject) => {
          http
            .get({ host: "127.0.0.1", port: h.port, path: `/c${i}`, agent }, (res) => {
              let t = "";
              res.setEncoding("latin1").on("data", (d: string) => {
                t += d;
              });
              res.on("end", () => resolve(t));
            })
            .on("error", reject);
        });
        expect(body).toBe(`/c${i} |`);
      }
    } finally {
      agent.destroy();
    }
    expect(h.seen).toHaveLength(20);
    expect(h.boundedAt.filter(Boolean)).toEqual([]);
  });

  it("bounds a connection from the request that pipelines, after calls that did not", async () => {
    const h = await harness();
    const c = await client(h.port);
    c.socket.write(get("/first"));
    await c.until(() => answers(c.text, 200) === 1);
    // Then a flood in one write, its answers held: Node's parser sees the flood's first two
    // requests by itself and is stopped after the second (the connection now pipelines). The
    // rest are bodiless heads: counted from the bytes, not parsed while two are unanswered.
    h.hold = true;
    c.socket.write(Array.from({ length: 500 }, (_, i) => get(`/f${i}`)).join(""));
    await c.until(() => h.seen.length === parsedAhead + 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(h.seen).toEqual(["/first", "/f0", "/f1"]);
    // As answers are given, the next heads are parsed, two ahead at most, up to the bound: 8
    // unanswered when the client sent the 9th, which is refused after them; the connection
    // closes, and the other 491 never reach the parser.
    await answerUntilClosed(h, c);
    expect(h.seen).toEqual(["/first", ...Array.from({ length: bound + 1 }, (_, i) => `/f${i}`)]);
    expect(h.boundedAt).toEqual([false, false, false, ...Array(bound - 1).fill(true)]);
    expect(h.mostUnanswered).toBe(parsedAhead);
    const statuses = [...c.text.matchAll(/HTTP\/1\.1 (\d+) /g)].map((m) => m[1]);
    expect(statuses).toEqual([...Array(bound + 1).fill("200"), "503"]);
    expect(c.text).toContain(`/f${bound - 1} |`);
  });

  it("counts a pipeline sent in several writes, blank lines between its requests not counted", async () => {
    const h = await harness();
    h.hold = true;
    const c = await client(h.port);
    // Within the bound: 8 requests in three writes, with the blank lines HTTP/1.1 allows
    // between requests; none is refused, and the connection stays open.
    c.socket.write(`${get("/a0")}\r\n${get("/a1")}${get("/a2")}\r\n\r\n`);
    await c.until(() => h.seen.length === parsedAhead);
    c.socket.write(`${get("/a3")}\r\n${get("/a4")}${get("/a5")}`);
    await new Promise((r) => setTimeout(r, 50));
    c.socket.write(`\r\n${get("/a6")}${get("/a7")}`);
    await new Promise((r) => setTimeout(r, 50));
    expect(h.seen).toEqual(["/a0", "/a1"]);
    for (let i = 0; i < 200 && answers(c.text, 200) < bound; i++) await answerHeld(h);
    expect(answers(c.text, 200)).toBe(bound);
    expect(c.closed).toBe(false);
    expect(h.mostUnanswered).toBe(parsedAhead);
    // Past the bound across writes: 5 sent, then 5 more while all are unanswered: the 9th is
    // refused after the 8 before it, and the 10th is dropped.
    c.text = "";
    c.socket.write(Array.from({ length: 5 }, (_, i) => get(`/b${i}`)).join(""));
    await c.until(() => h.held.length === parsedAhead);
    c.socket.write(Array.from({ length: 5 }, (_, i) => get(`/b${i + 5}`)).join(""));
    await new Promise((r) => setTimeout(r, 50));
    await answerUntilClosed(h, c);
    const statuses = [...c.text.matchAll(/HTTP\/1\.1 (\d+) /g)].map((m) => m[1]);
    expect(statuses).toEqual([...Array(bound).fill("200"), "503"]);
    expect(h.seen.at(-1)).toBe(`/b${bound}`);
  });

  it("reads a pipeline the old way from its first request with a body, and answers it all", async () => {
    const h = await harness();
    h.hold = true;
    const c = await client(h.port);
    const body = "x\r\n\r\ny";
    const post = `POST /p HTTP/1.1\r\nHost: x\r\ncontent-LENGTH: ${body.length}\r\n\r\n${body}`;
    c.socket.write(`${get("/g0")}${get("/g1")}${get("/g2")}${post}${get("/g3")}${get("/g4")}`);
    await c.until(() => h.seen.length === parsedAhead);
    await new Promise((r) => setTimeout(r, 50));
    expect(h.seen).toEqual(["/g0", "/g1"]);
    for (let i = 0; i < 200 && answers(c.text, 200) < 6; i++) await answerHeld(h);
    expect(h.seen).toEqual(["/g0", "/g1", "/g2", "/p", "/g3", "/g4"]);
    expect(c.text).toContain(`/p ${body}|`);
    expect(c.text.indexOf("/g4 ")).toBeGreaterThan(c.text.indexOf("/p "));
    // From the POST on, the parser reads as far as the bound allows, as it did every request.
    expect(h.mostUnanswered).toBeGreaterThan(parsedAhead);
    expect(c.closed).toBe(false);
  });

  it("ends the request the parser was stopped at, with nothing sent after it", async () => {
    const h = await harness();
    const c = await client(h.port);
    // Exactly two requests in one write: the parser is stopped after the second's head with
    // no bytes left; the handler answers each at its 'end', which still comes.
    c.socket.write(`${get("/x")}${get("/y")}`);
    await c.until(() => answers(c.text, 200) === 2);
    expect(c.text).toContain("/y |");
    expect(h.boundedAt).toEqual([false, false]);
  });

  it("hands the parser a head left incomplete once nothing else waits: its limits apply", async () => {
    const h = await harness();
    h.hold = true;
    const c = await client(h.port);
    // Two requests, then a head that never ends, past the parser's header size (16 KiB):
    // held while the two are answered, then the parser's, which refuses it (431) and closes.
    c.socket.write(`${get("/a")}${get("/b")}GET /c HTTP/1.1\r\nX-Long: ${"a".repeat(100_000)}`);
    await c.until(() => h.seen.length === parsedAhead);
    await answerUntilClosed(h, c);
    expect(h.seen).toEqual(["/a", "/b"]);
    const statuses = [...c.text.matchAll(/HTTP\/1\.1 (\d+) /g)].map((m) => m[1]);
    expect(statuses).toEqual(["200", "200", "431"]);
  });

  it("hands the parser the rest of the chunk it was stopped in: bodies arrive whole, in order", async () => {
    const h = await harness();
    const c = await client(h.port);
    c.socket.write(get("/first"));
    await c.until(() => answers(c.text, 200) === 1);
    // Six POSTs in one write, their bodies holding blank lines (where chunks are cut): the
    // parser stops after the second one's head, before its body.
    const body = "a\r\n\r\nb\r\n\r\n\r\n\r\nc";
    const post = (i: number) =>
      `POST /p${i} HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    c.socket.write([0, 1, 2, 3, 4, 5].map(post).join(""));
    await c.until(() => answers(c.text, 200) === 7);
    for (let i = 0; i < 6; i++) expect(c.text).toContain(`/p${i} ${body}|`);
    expect(c.text.indexOf("/p5 ")).toBeGreaterThan(c.text.indexOf("/p4 "));
    expect(h.boundedAt).toEqual([false, false, false, true, true, true, true]);
    expect(c.closed).toBe(false);
  });

  it("bounds a connection whose first packet already pipelines", async () => {
    const h = await harness();
    h.hold = true;
    const c = await client(h.port);
    c.socket.write(Array.from({ length: 100 }, (_, i) => get(`/f${i}`)).join(""));
    await c.until(() => h.seen.length === parsedAhead);
    await new Promise((r) => setTimeout(r, 100));
    expect(h.seen).toHaveLength(parsedAhead);
    await answerUntilClosed(h, c);
    expect(h.seen).toHaveLength(bound + 1);
    expect(h.boundedAt).toEqual([false, false, ...Array(bound - 1).fill(true)]);
    expect(answers(c.text, 200)).toBe(bound);
    expect(answers(c.text, 503)).toBe(1);
  });
});

/** Give the answers held so far, and let the client's connection move on. */
async function answerHeld(h: Harness) {
  for (const res of h.held.splice(0)) (res as unknown as { answer: () => void }).answer();
  await new Promise((r) => setTimeout(r, 5));
}

/** Give held answers as they come until the server closes the client's connection. */
async function answerUntilClosed(h: Harness, c: { closed: boolean }) {
  for (let i = 0; i < 400 && !c.closed; i++) await answerHeld(h);
  expect(c.closed).toBe(true);
}
