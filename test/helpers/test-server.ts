import { storeRoles } from "../../src/auth/capabilities.js";
import { type Config, loadConfig } from "../../src/config.js";
import { createServer, type Server, type ServerDeps } from "../../src/server.js";
import { createPostgresStore } from "../../src/store/postgres/pg-store.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { freePort } from "./free-port.js";
import { useForBlock } from "./late.js";
import { newPgDatabase } from "./postgres.js";
import { type TestCaller, type TestOrg, testOrgs } from "./test-orgs.js";

/** The store backends a suite runs against when it runs against each. */
export const backends = ["sqlite", "postgres"] as const;
export type Backend = (typeof backends)[number];
/**
 * `backend: postgresBackend`: a server on the run's PostgreSQL. Importing it (or `backends`)
 * is what puts a test file in the postgres tier, which starts it (test/tiers.ts).
 */
export const postgresBackend: Backend = "postgres";

/**
 * A running Gatehouse on 127.0.0.1: an in-memory SQLite database, or with `backend:
 * "postgres"` a fresh database of the test run's PostgreSQL.
 */
export interface TestServer {
  url: string;
  port: number;
  config: Config;
  store: Store;
  server: Server;
  /** A real token for an identity, signed by the server's issuer (aud: the base URL). */
  tokenFor(identityUid: string, aud?: string): Promise<string>;
  /** Create an organization owned by a new person (through the store), with the owner's token. */
  makeOrg(name?: string): Promise<TestOrg>;
  /**
   * Create a workload identity in `group` (through the store), bound at `at` (default: the
   * group) to the roles named (built-in names or role uids); returns it with a token.
   */
  makeIdentity(group: string, roles?: readonly string[], at?: string): Promise<TestCaller>;
  close(): Promise<void>;
}

export type { TestCaller, TestOrg } from "./test-orgs.js";

export { freePort };

/**
 * A test server's close waits for no idle connection. A server shutting down keeps an HTTP/1.1
 * keep-alive connection a second after its last answer, the client may be about to reuse it
 * (src/one-port.ts), and fetch's pool keeps the tests' connections: every close waited that
 * second, idle, a second a file in most files (the api tier: 79 s, 62 s without). The shutdown
 * itself is tested on a real process (test/reliability/shutdown-keep-alive.test.ts).
 */
export const closeAtOnce = { shutdownIdleMs: 0 } as const;

/** How startTestServer starts a server, besides its settings. */
export type TestServerOptions = Pick<
  ServerDeps,
  "now" | "logStream" | "interceptors" | "timeouts" | "consoleDir"
> & {
  /** Listen here (a port from freePort()) when something must know it beforehand. */
  port?: number;
  /** The store; default SQLite (GATEHOUSE_DB, ":memory:" unless given). */
  backend?: Backend;
};

/**
 * Start a Gatehouse on a free loopback port; settings are env-style overrides, `now` the
 * server's clock (token lifetimes, OIDC key caches and cool-downs).
 */
export async function startTestServer(
  env: Record<string, string> = {},
  opts: TestServerOptions = {},
): Promise<TestServer> {
  const port = opts.port ?? (await freePort());
  const config = loadConfig([], {
    GATEHOUSE_HOST: "127.0.0.1",
    GATEHOUSE_PORT: String(port),
    GATEHOUSE_DB: ":memory:",
    GATEHOUSE_LOG_LEVEL: "silent",
    GATEHOUSE_DOMAIN: "gatehouse.test",
    GATEHOUSE_SHUTDOWN_TIMEOUT_MS: "2000",
    GATEHOUSE_BASE_URL: `http://127.0.0.1:${port}`,
    ...(opts.backend === "postgres" ? { GATEHOUSE_DATABASE_URL: await newPgDatabase() } : {}),
    ...env,
  });
  // The store shares the server's clock: role binding expiry is decided in its access answers.
  const clock = opts.now ? { now: opts.now } : {};
  const store =
    config.databaseUrl === ""
      ? createSqliteStore(config.dbPath, { roles: storeRoles, ...clock })
      : await createPostgresStore(config.databaseUrl, {
          roles: storeRoles,
          timeoutMs: config.dbTimeoutMs,
          ...clock,
        });
  const { port: _port, backend: _backend, ...deps } = opts;
  // Tests never ask real DNS: every domain claim stays unverified unless a test verifies it.
  const server = await createServer({
    config,
    store,
    resolveTxt: (name) => Promise.reject(new Error(`no DNS in tests: ${name}`)),
    ...deps,
    timeouts: { ...closeAtOnce, ...deps.timeouts },
  });
  await server.listen();
  const tokenFor = async (uid: string, aud = config.baseUrl) =>
    (await server.tokens.issue(uid, aud)).token;
  return {
    tokenFor,
    ...testOrgs(store, (uid) => tokenFor(uid)),
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

/** A value, or a function that gives it once what it depends on exists (in beforeAll). */
export type WhenStarting<T> = T | (() => T | Promise<T>);

/**
 * The test server of a file or a describe block: started (startTestServer) in a beforeAll of
 * the block this is called in, closed in its afterAll. What it returns stands for the server:
 * use it in hooks and tests as a TestServer (using it before the start throws). `env` and
 * `opts` may be functions, for settings that depend on what an earlier beforeAll made (an
 * identity provider's URL); a later beforeAll of the block sees the server started.
 */
export function useTestServer(
  env: WhenStarting<Record<string, string>> = {},
  opts: WhenStarting<TestServerOptions> = {},
): TestServer {
  return useForBlock(
    async () =>
      startTestServer(
        typeof env === "function" ? await env() : env,
        typeof opts === "function" ? await opts() : opts,
      ),
    "useTestServer(): the server runs from the block's beforeAll to its afterAll; use it in hooks and tests",
  );
}
