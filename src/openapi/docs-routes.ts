import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyPluginAsync } from "fastify";
import { type ConsoleFile, csp, readConsoleFile, sendFile } from "../console-routes.js";

/** Options of docsRoutes. */
export interface DocsOptions {
  /** The OpenAPI document, built once at start-up. */
  document: object;
}

// The renderer's files (swagger-ui-dist, an npm package: no CDN) and our two of our own.
const rendererFiles: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
};
const ownFiles: Record<string, string> = {
  "index.html": "text/html; charset=utf-8",
  "docs.js": "text/javascript; charset=utf-8",
};

/**
 * Serve the OpenAPI document at `/openapi.json` and its rendering at `/docs/` (Swagger UI from
 * the swagger-ui-dist package), under the console's CSP: no inline code, nothing from
 * elsewhere. The files are read when the routes are registered, and compressed once a process
 * (readConsoleFile).
 */
export const docsRoutes: FastifyPluginAsync<DocsOptions> = async (app, opts) => {
  // Written at the first request for it: most servers (every test's) never serve it, and
  // writing it took about 10 ms a start.
  let json: Buffer | undefined;
  const renderer = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
  // Beside this module: src/openapi/docs under the tests, dist/src/openapi/docs in a build
  // (scripts/copy-assets.mjs puts them there; the container image has no src/).
  const own = fileURLToPath(new URL("docs/", import.meta.url));
  const files = new Map<string, ConsoleFile>();
  for (const [name, type] of Object.entries(rendererFiles)) {
    files.set(name, readConsoleFile(renderer, name, type));
  }
  for (const [name, type] of Object.entries(ownFiles)) {
    files.set(name, readConsoleFile(own, name, type));
  }
  const index = files.get("index.html")!;

  app.get("/openapi.json", async (_req, reply) => {
    json ??= Buffer.from(JSON.stringify(opts.document));
    return reply
      .header("content-type", "application/json")
      .header("cache-control", "no-cache")
      .header("access-control-allow-origin", "*")
      .send(json);
  });
  app.get("/docs", async (_req, reply) => reply.redirect("/docs/", 301));
  app.get("/docs/", (req, reply) => {
    reply
      .header("content-security-policy", csp)
      .header("cache-control", "no-cache")
      .header("x-content-type-options", "nosniff")
      .header("referrer-policy", "no-referrer");
    sendFile(req, reply, index);
  });
  app.get<{ Params: { file: string } }>("/docs/:file", (req, reply) => {
    const file = files.get(req.params.file);
    if (!file || req.params.file === "index.html") {
      reply.code(404).type("text/plain; charset=utf-8").send("Not found\n");
      return;
    }
    reply
      .header("content-security-policy", csp)
      .header("cache-control", "no-cache")
      .header("x-content-type-options", "nosniff");
    sendFile(req, reply, file);
  });
};

/** This package's root, found from src/ (tests) or dist/src/ (a build) alike. */
export function packageRoot(): string {
  for (const rel of ["../..", "../../.."]) {
    const root = fileURLToPath(new URL(`${rel}/`, import.meta.url));
    try {
      const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { name?: string };
      if (pkg.name === "gatehouse") return root;
    } catch {
      // not at this depth
    }
  }
  return process.cwd();
}

/** This package's version, for the document's info.version. */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as {
    version?: string;
  };
  return pkg.version ?? "0.0.0";
}
