import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";

/** A listener of its own for `/metrics`, apart from the API's port. */
export interface MetricsListener {
  /** Listen on host:port (0 picks a free port); resolves to the port. */
  listen(host: string, port: number): Promise<number>;
  /** Stop listening and close its connections. */
  close(): Promise<void>;
}

/**
 * Serve `GET /metrics` (Prometheus text format) from `registry` on a plain HTTP listener.
 * It is a separate port, not a route of the API, so that metrics are never reachable through
 * the API's address, and it binds where the deployment says (loopback by default). Anything
 * else is 404; a scrape that fails to collect is 500 with no detail.
 */
export function createMetricsListener(
  registry: Registry,
  onError: (err: unknown) => void,
): MetricsListener {
  const server: HttpServer = createHttpServer((req, res) => {
    const path = (req.url ?? "/").split("?", 1)[0];
    if (path !== "/metrics" || (req.method !== "GET" && req.method !== "HEAD")) {
      res.writeHead(path === "/metrics" ? 405 : 404, { "content-type": "text/plain" });
      res.end(path === "/metrics" ? "Method Not Allowed\n" : "Not Found\n");
      return;
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { "content-type": registry.contentType, "cache-control": "no-store" });
        res.end(req.method === "HEAD" ? undefined : text);
      },
      (err: unknown) => {
        onError(err);
        res.writeHead(500, { "content-type": "text/plain" });
        res.end("Internal Server Error\n");
      },
    );
  });
  // Scrapers keep connections alive; close() must not wait for them.
  server.keepAliveTimeout = 5_000;
  return {
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          resolve((server.address() as AddressInfo).port);
        });
      });
    },
    close() {
      if (!server.listening) return Promise.resolve();
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
