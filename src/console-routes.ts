import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
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

/** A console file: its bytes, and the same compressed where that is smaller. */
export interface ConsoleFile {
  body: Buffer;
  type: string;
  encoded: Partial<Record<Encoding, Buffer>>;
}

// What readConsoleFile made, by path, with the size and modification time it was read at (a file
// written again is read again, in place of the old). A process that starts servers one after
// another compresses each file once: compressing swagger-ui's bundle was about a fifth of a
// second of every server start (load 9 on 2 cores), and the test suite starts hundreds of
// servers in a few processes.
const made = new Map<string, { size: number; mtimeMs: number; file: ConsoleFile }>();

/**
 * Read a built file and its compressed forms: those `console/build.mjs` wrote beside it
 * (`<name>.br`, `<name>.gz`), else compressed here once a process; each kept only if smaller.
 */
export function readConsoleFile(dir: string, name: string, type: string): ConsoleFile {
  const path = join(dir, name);
  const { size, mtimeMs } = statSync(path);
  const known = made.get(path);
  if (known && known.size === size && known.mtimeMs === mtimeMs && known.file.type === type) {
    return known.file;
  }
  const file = compressedFile(dir, name, type);
  made.set(path, { size, mtimeMs, file });
  return file;
}

function compressedFile(dir: string, name: string, type: string): ConsoleFile {
  const body = readFileSync(join(dir, name));
  const encoded: ConsoleFile["encoded"] = {};
  const compress: Record<Encoding, () => Buffer> = {
    br: () => brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } }),
    gzip: () => gzipSync(body, { level: 9 }),
  };
  for (const e of encodings) {
    const file = join(dir, `${name}.${e === "br" ? "br" : "gz"}`);
    const bytes = existsSync(file) ? readFileSync(file) : compress[e]();
    if (bytes.length < body.length) encoded[e] = bytes;
  }
  return { body, type, encoded };
}

/**
 * Send a console file in the best encoding the client accepts (Accept-Encoding), saying so in
 * Content-Encoding; Vary tells caches that the bytes depend on that header.
 */
export function sendFile(
  req: FastifyRequest,
  reply: FastifyReply,
  file: ConsoleFile,
): FastifyReply {
  reply.header("vary", "Accept-Encoding").type(file.type);
  const header = req.headers["accept-encoding"];
  const offered = encodings.filter((e) => file.encoded[e]);
  const chosen = header && offered.length > 0 ? negotiate(header, offered) : null;
  const encoded = chosen ? file.encoded[chosen] : undefined;
  if (chosen && encoded) return reply.header("content-encoding", chosen).send(encoded);
  return reply.send(file.body);
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
  app.get("/console/", async (req, reply) => {
    if (!index) {
      return reply
        .code(404)
        .type("text/plain; charset=utf-8")
        .send("The console is not built: run npm run build.\n");
    }
    reply
      .header("content-security-policy", csp)
      .header("cache-control", "no-cache")
      .header("x-content-type-options", "nosniff")
      .header("referrer-policy", "no-referrer");
    return sendFile(req, reply, index);
  });
  app.get<{ Params: { file: string } }>("/console/:file", async (req, reply) => {
    const file = files.get(req.params.file);
    if (!file || req.params.file === "index.html") {
      return reply.code(404).type("text/plain; charset=utf-8").send("Not found\n");
    }
    reply
      .header("cache-control", "public, max-age=31536000, immutable")
      .header("x-content-type-options", "nosniff");
    return sendFile(req, reply, file);
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
