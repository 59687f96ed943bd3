import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyPluginAsync } from "fastify";

/** Options of consoleRoutes. */
export interface ConsoleOptions {
  /** The built console (`npm run build` writes dist/console). */
  dir: string;
  /** Told once when there is no built console to serve. */
  onMissing?: (dir: string) => void;
}

// The console's own files only: scripts and styles from 'self', API calls to 'self', no inline
// code, no framing.
const csp = [
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

/**
 * Serve the web console at `/console/`: index.html (never cached: it names the current bundle)
 * for the page itself, and the content-hashed bundle files (cached for a year). The files are
 * read once at start-up; nothing outside the build directory can be named.
 */
export const consoleRoutes: FastifyPluginAsync<ConsoleOptions> = async (app, opts) => {
  const files = new Map<string, { body: Buffer; type: string }>();
  try {
    for (const name of readdirSync(opts.dir)) {
      const ext = name.slice(name.lastIndexOf("."));
      const type = types[ext];
      if (type) files.set(name, { body: readFileSync(join(opts.dir, name)), type });
    }
  } catch {
    // not built
  }
  const index = files.get("index.html");
  if (!index) opts.onMissing?.(opts.dir);

  app.get("/console", async (_req, reply) => reply.redirect("/console/", 301));
  app.get("/console/", async (_req, reply) => {
    if (!index) {
      return reply
        .code(404)
        .type("text/plain; charset=utf-8")
        .send("The console is not built: run npm run build.\n");
    }
    return reply
      .header("content-security-policy", csp)
      .header("cache-control", "no-cache")
      .header("x-content-type-options", "nosniff")
      .header("referrer-policy", "no-referrer")
      .type(index.type)
      .send(index.body);
  });
  app.get<{ Params: { file: string } }>("/console/:file", async (req, reply) => {
    const file = files.get(req.params.file);
    if (!file || req.params.file === "index.html") {
      return reply.code(404).type("text/plain; charset=utf-8").send("Not found\n");
    }
    return reply
      .header("cache-control", "public, max-age=31536000, immutable")
      .header("x-content-type-options", "nosniff")
      .type(file.type)
      .send(file.body);
  });
};

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
