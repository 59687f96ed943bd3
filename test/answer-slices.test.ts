import { randomBytes } from "node:crypto";
import http from "node:http";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createOnePort, type OnePort } from "../src/one-port.js";

// Large HTTP/1.1 answers are written a slice at a time (src/answer-slices.ts), each slice at its
// address's fair turn (src/fair-starts.ts). On the one port with a plain handler: what clients
// read is unchanged, and a client that reads nothing is handed one slice past what its
// connection's buffers take, not the whole answer.

const slice = 64 * 1024;
const big = randomBytes(4 * 1024 * 1024 + 123);
const huge = Buffer.alloc(32 * 1024 * 1024, 7);
// Multi-byte characters, so that a slice boundary falls inside one: a string body is sliced as
// its bytes.
const text = "é€😀 ".repeat(60_000);

let port: OnePort | undefined;
let server: http.Server | undefined;
/** The server side of each connection, by the path its last request asked for. */
const serverSockets = new Map<string, net.Socket>();
afterEach(async () => {
  server?.closeAllConnections();
  await port?.close(0);
  port = undefined;
  server = undefined;
  serverSockets.clear();
});

async function start(): Promise<number> {
  port = createOnePort(undefined, { limits: { answerBytesPerTurn: slice } });
  server = port.serverFactory((req, res) => {
    const r = res as http.ServerResponse;
    serverSockets.set(req.url ?? "", req.socket as net.Socket);
    if (req.url === "/text") {
      r.writeHead(200, {
        "content-type": "text/plain; charset=utf-8",
        "content-length": Buffer.byteLength(text),
      });
      r.end(text);
    } else if (req.url === "/small") {
      r.writeHead(200, { "content-length": 2 }).end("ok");
    } else {
      const body = req.url === "/huge" ? huge : big;
      r.writeHead(200, { "content-length": body.length });
      r.end(req.method === "HEAD" ? undefined : body);
    }
  });
  return (await port.listen("127.0.0.1", 0)).port;
}

/** GET (or HEAD) `path` on `agent`; resolves with the status, content-length and body. */
function get(p: number, path: string, agent: http.Agent, method = "GET") {
  return new Promise<{ status: number; length: string | undefined; body: Buffer }>(
    (resolve, reject) => {
      const req = http.request({ host: "127.0.0.1", port: p, path, agent, method }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            length: res.headers["content-length"],
            body: Buffer.concat(chunks),
          }),
        );
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end();
    },
  );
}

describe("large answers written in slices", () => {
  it("arrive whole, again and again on a kept-alive connection, strings as their bytes", async () => {
    const p = await start();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let i = 0; i < 3; i++) {
        const a = await get(p, "/big", agent);
        expect(a.status).toBe(200);
        expect(a.body.equals(big)).toBe(true);
        const t = await get(p, "/text", agent);
        expect(t.body.toString("utf8")).toBe(text);
        expect((await get(p, "/small", agent)).body.toString()).toBe("ok");
      }
      const head = await get(p, "/big", agent, "HEAD");
      expect(head).toMatchObject({ status: 200, length: String(big.length) });
      expect(head.body.length).toBe(0);
    } finally {
      agent.destroy();
    }
  });

  it("arrive whole and in order when pipelined", async () => {
    const p = await start();
    const socket = net.connect(p, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    const ask = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
    socket.write(ask("/big") + ask("/small") + ask("/text") + ask("/big"));
    const expected = [big, Buffer.from("ok"), Buffer.from(text), big];
    const total = expected.reduce((n, b) => n + b.length, 0);
    // Each answer: its head, then exactly content-length bytes.
    const bodies = await new Promise<Buffer[]>((resolve, reject) => {
      const timer = setInterval(() => {
        const all = Buffer.concat(chunks);
        if (all.length < total) return; // the bodies alone, without their heads
        const found: Buffer[] = [];
        let at = 0;
        for (let i = 0; i < expected.length; i++) {
          const end = all.indexOf("\r\n\r\n", at);
          if (end < 0) return;
          const length = Number(
            /content-length: (\d+)/i.exec(all.subarray(at, end).toString())?.[1],
          );
          if (end + 4 + length > all.length) return; // not all here yet
          found.push(all.subarray(end + 4, end + 4 + length));
          at = end + 4 + length;
        }
        clearInterval(timer);
        resolve(found);
      }, 20);
      socket.on("error", (e) => {
        clearInterval(timer);
        reject(e);
      });
    });
    socket.destroy();
    expect(bodies.map((b, i) => b.equals(expected[i]!))).toEqual([true, true, true, true]);
  });

  it("hand a client that reads nothing one slice past what its connection takes, not the whole answer", async () => {
    const p = await start();
    // A client that asks for 32 MB and reads none of it.
    const idle = net.connect(p, "127.0.0.1", () =>
      idle.write("GET /huge HTTP/1.1\r\nHost: x\r\n\r\n"),
    );
    idle.pause();
    idle.on("error", () => undefined);
    // Meanwhile another client reads a large answer whole: slices wait only for their own
    // connection.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let i = 0; i < 2; i++) expect((await get(p, "/big", agent)).body.equals(big)).toBe(true);
      // Long enough for the idle client's connection to take what the kernel's buffers will.
      await new Promise((r) => setTimeout(r, 300));
      const s = serverSockets.get("/huge")!;
      expect(s).toBeDefined();
      // What Node holds for the connection: a slice at most (it was the whole answer less what
      // the kernel took); the rest waits as a reference to the answer's bytes.
      expect(s.writableLength).toBeLessThanOrEqual(slice + 1024);
      expect(s.bytesWritten).toBeLessThan(huge.length / 2);
    } finally {
      agent.destroy();
      idle.destroy();
    }
  });
});
