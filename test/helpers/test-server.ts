import net from "node:net";
import { type Config, loadConfig } from "../../src/config.js";
import { createServer, type Server } from "../../src/server.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";

/** A running Gatehouse on 127.0.0.1 with an in-memory database. */
export interface TestServer {
  url: string;
  port: number;
  config: Config;
  store: Store;
  server: Server;
  close(): Promise<void>;
}

/** Find a free loopback port (the base URL must name the port before the server starts). */
export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/**
 * Start a Gatehouse on a free loopback port; settings are env-style overrides, `now` the
 * server's clock (token lifetimes, OIDC key caches and cool-downs).
 */
export async function startTestServer(
  env: Record<string, string> = {},
  opts: { now?: () => number } = {},
): Promise<TestServer> {
  const port = await freePort();
  const config = loadConfig([], {
    GATEHOUSE_HOST: "127.0.0.1",
    GATEHOUSE_PORT: String(port),
    GATEHOUSE_DB: ":memory:",
    GATEHOUSE_LOG_LEVEL: "silent",
    GATEHOUSE_DOMAIN: "gatehouse.test",
    GATEHOUSE_SHUTDOWN_TIMEOUT_MS: "2000",
    GATEHOUSE_BASE_URL: `http://127.0.0.1:${port}`,
    ...env,
  });
  const store = createSqliteStore(config.dbPath);
  const server = await createServer({ config, store, ...opts });
  await server.listen();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    config,
    store,
    server,
    async close() {
      await server.close();
      await store.close();
    },
  };
}
