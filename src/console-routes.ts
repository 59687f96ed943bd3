import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { brotliCompress, constants, gzip as gzipCompress } from "node:zlib";
import negotiate from "@fastify/accept-negotiator";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";

/** Options of consoleRoutes. */
export interface ConsoleOptions {
  /** The built console (`npm run build` writes dist/console). */
  dir: string;
  /** Told once when there is no built console to serve. */
  onMissing?: (dir: string) => void;
}

/**
 * The console's own files only: scripts and styles from 'self', API calls to 'self', no inline
 * code, no framing. /docs is served under the same policy.
 */
export const csp = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const types: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
};

/** The encodings the console is sent in besides identity, best first. */
const encodings = ["br", "gzip"] as const;
type Encoding = (typeof encodings)[number];

/** A console file's forms smaller than its bytes, by encoding. */
export type Encoded = Partial<Record<Encoding, Buffer>>;

/** A console file: its bytes, and the same compressed where that is smaller. */
export interface ConsoleFile {
  body: Buffer;
  type: string;
  /** Its compressed forms, made once a process at the first request that accepts one. */
  encoded(): Promise<Encoded>;
  /** Its compressed forms if they are made already. */
  encodedNow(): Encoded | undefined;
}

const brotli = promisify(brotliCompress);
const gzip = promisify(gzipCompress);

/**
 * The compressed forms of each file compressed here, by path, size and modification time: made
 * once a process, whatever number of servers it starts (a test worker starts hundreds). The
 * Swagger UI bundle alone (1.7 MB) took about 0.5 s of CPU to compress at every start.
 */
const compressedOnce = new Map<string, { made: Promise<Encoded>; forms?: Encoded }>();

/**
 * The bytes of each file read here, checked by size and modification time as compressedOnce:
 * read once a process. The Swagger UI bundle (1.7 MB) was read again at every server start
 * (about 10 ms of CPU, and as much garbage). Shared: never changed, only sent.
 */
const readBodies = new Map<string, { key: string; body: Buffer }>();
function readOnce(key: string, path: string): Buffer {
  const hit = readBodies.get(path);
  if (hit?.key === key) return hit.body;
  // A file rebuilt replaces its old bytes here (a path holds one copy).
  const body = readFileSync(path);
  readBodies.set(path, { key, body });
  return body;
}

/**
 * Read a built file and its compressed forms: those `console/build.mjs` wrote beside it
 * (`<name>.br`, `<name>.gz`), else compressed here, on libuv's threads (the event loop keeps
 * answering), when a request first accepts them; each kept only if smaller.
 */
export function readConsoleFile(dir: string, name: string, type: string): ConsoleFile {
  const path = join(dir, name);
  const { size, mtimeMs } = statSync(path);
  const key = `${path}\0${size}\0${mtimeMs}`;
  const body = readOnce(key, path);
  const beside: Encoded = {};
  let missing = false;
  for (const e of encodings) {
    const file = `${path}.${e === "br" ? "br" : "gz"}`;
    if (existsSync(file)) beside[e] = readFileSync(file);
    else missing = true;
  }
  const smaller = (all: Encoded): Encoded =>
    Object.fromEntries(Object.entries(all).filter(([, b]) => b.length < body.length));
  if (!missing) {
    const forms = smaller(beside);
    const ready = Promise.resolve(forms);
    return { body, type, encoded: () => ready, encodedNow: () => forms };
  }
  return {
    body,
    type,
    encoded: () => {
      let once = compressedOnce.get(key);
      if (!once) {
        // The forms, once made, are kept beside their promise for encodedNow.
        const entry: { made: Promise<Encoded>; forms?: Encoded } = {
          made: Promise.all([
            beside.br ?? brotli(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } }),
            beside.gzip ?? gzip(body, { level: 9 }),
          ]).then(([br, gz]) => {
            entry.forms = smaller({ br, gzip: gz });
            return entry.forms;
          }),
        };
        once = entry;
        compressedOnce.set(key, once);
      }
      return once.made;
    },
    encodedNow: () => compressedOnce.get(key)?.forms,
  };
}

/**
 * Send a console file in the best encoding the client accepts (Accept-Encoding), saying so in
 * Content-Encoding; Vary tells caches that the bytes depend on that header.
 *
 * Call it from a route that returns nothing (not an async one that returns its reply): fastify
 * resolves a reply returned from an async handler (a thenable) by waiting for the answer's end
 * with end-of-stream listeners, and a large file's answer is written a slice a turn
 * (src/answer-slices.ts): those listeners and their closures were a tenth of what outlived
 * the young generation under a flood of console files (bench/RESULTS.md, round 10).
 */
export function sendFile(req: FastifyRequest, reply: FastifyReply, file: ConsoleFile): void {
  reply.header("vary", "Accept-Encoding").type(file.type);
  const header = req.headers["accept-encoding"];
  if (!header) {
    reply.send(file.body);
    return;
  }
  const encoded = file.encodedNow();
  if (encoded === undefined) {
    // The first request that accepts a compressed form waits for it to be made.
    file.encoded().then(
      () => sendFile(req, reply, file),
      (err: unknown) => reply.send(err),
    );
    return;
  }
  const offered = encodings.filter((e) => encoded[e]);
  const chosen = offered.length > 0 ? negotiate(header, offered) : null;
  const bytes = chosen ? encoded[chosen] : undefined;
  if (chosen && bytes) reply.header("content-encoding", chosen).send(bytes);
  else reply.send(file.body);
}

/**
 * Serve the web console at `/console/`: index.html (never cached: it names the current bundle)
 * for the page itself, and the content-hashed bundle files (cached for a year), compressed
 * as the client accepts (brotli or gzip). The files are read once at start-up; nothing outside
 * the build directory can be named.
 */
export const consoleRoutes: FastifyPluginAsync<ConsoleOptions> = async (app, opts) => {
  const files = new Map<string, ConsoleFile>();
  try {
    for (const name of readdirSync(opts.dir)) {
      const ext = name.slice(name.lastIndexOf("."));
      const type = types[ext];
      if (type) files.set(name, readConsoleFile(opts.dir, name, type));
    }
  } catch {
    // not built
  }
  const index = files.get("index.html");
  if (!index) opts.onMissing?.(opts.dir);

  app.get("/console", async (_req, reply) => reply.redirect("/console/", 301));
  app.get("/console/", (req, reply) => {
    if (!index) {
      reply
        .code(404)
        .type("text/plain; charset=utf-8")
        .send("The console is not built: run npm run build.\n");
      return;
    }
    reply
      .header("content-security-policy", csp)
      .header("cache-control", "no-cache")
      .header("x-content-type-options", "nosniff")
      .header("referrer-policy", "no-referrer");
    sendFile(req, reply, index);
  });
  app.get<{ Params: { file: string } }>("/console/:file", (req, reply) => {
    const file = files.get(req.params.file);
    if (!file || req.params.file === "index.html") {
      reply.code(404).type("text/plain; charset=utf-8").send("Not found\n");
      return;
    }
    reply
      .header("cache-control", "public, max-age=31536000, immutable")
      .header("x-content-type-options", "nosniff");
    sendFile(req, reply, file);
  });
};

/**
 * For the REST gateway's onNoRoute: send a browser asking for `/` (GET or HEAD, Accept naming
 * text/html) to the console, and say whether it did; API clients keep the API's NOT_FOUND.
 */
export function browserToConsole(req: FastifyRequest, reply: FastifyReply): boolean {
  if (req.url !== "/" || (req.method !== "GET" && req.method !== "HEAD")) return false;
  // The answer at / depends on Accept: caches must keep the two apart.
  reply.header("vary", "Accept");
  const accept = req.headers.accept;
  if (!accept || !negotiate(accept, ["text/html"])) return false;
  reply.redirect("/console/", 302);
  return true;
}

/** dist/console of this package, found from src/ (tests) or dist/src/ (a build) alike. */
export function consoleDir(): string {
  for (const rel of ["..", "../.."]) {
    const root = fileURLToPath(new URL(`${rel}/`, import.meta.url));
    try {
      const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { name?: string };
      if (pkg.name === "gatehouse") return join(root, "dist", "console");
    } catch {
      // not at this depth
    }
  }
  return join(process.cwd(), "dist", "console");
}
