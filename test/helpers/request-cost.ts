import { AsyncLocalStorage } from "node:async_hooks";
import { storeRoles } from "../../src/auth/capabilities.js";
import { type Config, loadConfig } from "../../src/config.js";
import { createServer, type Server } from "../../src/server.js";
import { createSqliteStore, type SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { freePort } from "./free-port.js";
import { closeAtOnce } from "./test-server.js";

/** What a server did on its requests' behalf so far: store calls, SQLite statements run. */
export interface RequestCosts {
  calls: number;
  statements: number;
}

/** Counts what an in-process server does serving requests (createRequestCounter). */
export interface RequestCounter {
  readonly counts: RequestCosts;
  /** `store`, with each method call made serving a request counted. */
  store<T extends object>(store: T): T;
  /** Count each run, serving a request, of the statements `db` prepares from now on. */
  statements(db: SqliteStore["db"]): void;
  /** Mark `server`'s requests (before it listens): what runs on their behalf is counted. */
  attach(server: Server): void;
}

/**
 * Count the store calls and statements a server makes serving requests, and only those: the
 * server's own sweeps (binding expiry, access-request lapses, webhook deliveries: a few a
 * second) call the store too, and one falling inside a request's window on a loaded machine
 * made a count test fail now and then. A request's handling runs in an AsyncLocalStorage
 * context entered in the server's request listener, ahead of fastify's.
 */
export function createRequestCounter(): RequestCounter {
  const serving = new AsyncLocalStorage<true>();
  const counts: RequestCosts = { calls: 0, statements: 0 };
  return {
    counts,
    store(target) {
      return new Proxy(target, {
        get(t, key, receiver) {
          const value = Reflect.get(t, key, receiver);
          if (typeof value !== "function") return value;
          return (...args: unknown[]) => {
            if (serving.getStore()) counts.calls++;
            return (value as (...a: unknown[]) => unknown).apply(t, args);
          };
        },
      });
    },
    statements(db) {
      const prepare = db.prepare.bind(db);
      db.prepare = ((text: string) => {
        const stmt = prepare(text);
        for (const m of ["all", "get", "run", "iterate"] as const) {
          const run = stmt[m].bind(stmt) as (...a: unknown[]) => unknown;
          (stmt as unknown as Record<string, unknown>)[m] = (...a: unknown[]) => {
            if (serving.getStore()) counts.statements++;
            return run(...a);
          };
        }
        return stmt;
      }) as typeof db.prepare;
    },
    attach(server) {
      server.app.server.prependListener("request", () => serving.enterWith(true));
    },
  };
}

/** An in-process server whose request costs are counted (startCountedServer). */
export interface CountedServer {
  server: Server;
  /** The store itself: what a test seeds through it is not counted. */
  store: SqliteStore;
  config: Config;
  /** The server's clock: it stands still, so that no cache expires between two requests. */
  now: number;
  counts: RequestCosts;
  close(): Promise<void>;
}

/**
 * Start a server on an in-memory SQLite store (settings: `env` over a quiet loopback one),
 * counting the store calls and statements it makes serving requests (createRequestCounter).
 */
export async function startCountedServer(env: Record<string, string> = {}): Promise<CountedServer> {
  const port = await freePort();
  const config = loadConfig([], {
    GATEHOUSE_DB: ":memory:",
    GATEHOUSE_LOG_LEVEL: "silent",
    GATEHOUSE_PORT: String(port),
    GATEHOUSE_BASE_URL: `http://127.0.0.1:${port}`,
    ...env,
  });
  const store = createSqliteStore(config.dbPath, { roles: storeRoles });
  const cost = createRequestCounter();
  cost.statements(store.db);
  const now = Date.now();
  const server = await createServer({
    config,
    store: cost.store(store as Store),
    now: () => now,
    timeouts: closeAtOnce,
  });
  cost.attach(server);
  await server.listen();
  return {
    server,
    store,
    config,
    now,
    counts: cost.counts,
    async close() {
      await server.close();
      await store.close();
    },
  };
}
