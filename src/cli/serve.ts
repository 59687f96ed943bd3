import { accessSync, constants } from "node:fs";
import { storeRoles } from "../auth/capabilities.js";
import { type Config, ConfigError, loadConfig, redactedDatabaseUrl } from "../config.js";
import { createServer, type Server } from "../server.js";
import { createSqliteStore } from "../store/sqlite/sqlite-store.js";
import type { Store } from "../store/store.js";
import { checkDatabaseFile } from "./database-file.js";
import { recordServingUrls } from "./serving-urls.js";

/** Where serve reports the PostgreSQL change feed's state once the server (and its log) exists. */
let onFeedState: ((up: boolean, err?: Error) => void) | undefined;

/**
 * Serve the API until SIGTERM or SIGINT, then stop accepting, finish in-flight calls and
 * close the database. Resolves to the exit code. A setting the server cannot start with (a
 * missing TLS file, a file that is not a database, a busy port, an address it cannot listen
 * on) throws ConfigError naming it: one line and exit 2, not a stack trace.
 */
export async function serve(argv: string[]): Promise<number> {
  const config = loadConfig(argv);
  checkReadable(config.tlsCertPath, "GATEHOUSE_TLS_CERT (--tls-cert)");
  checkReadable(config.tlsKeyPath, "GATEHOUSE_TLS_KEY (--tls-key)");
  let warn: ((err: Error) => void) | undefined;
  const store = await openStore(config, (err) => warn?.(err));
  let server: Server;
  try {
    if (config.databaseUrl === "") checkDatabaseFile(config.dbPath, config.allowReadableDb);
    server = await createServer({ config, store });
    await recordServingUrls(store, config);
  } catch (err) {
    await store.close();
    throw err;
  }
  warn = (err) =>
    server.app.log.warn({ err }, "the WAL checkpoint thread failed; commits checkpoint meanwhile");
  onFeedState = (up, err) => {
    if (up) server.app.log.info("the change feed listens: access answers are cached again");
    else
      server.app.log.warn(
        { err },
        "the change feed was lost: access answers are read from the database until it is back",
      );
  };
  const fresh = await hasNoGroup(store);
  // Listened for before the port opens: a SIGTERM sent as soon as the server answers (a
  // supervisor, a test) stops it cleanly, where Node's default would end it at once, with its
  // last log lines unwritten.
  const stopSignal = new Promise<string>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  let address: Awaited<ReturnType<Server["listen"]>>;
  try {
    address = await server.listen();
  } catch (err) {
    await server.close().catch(() => undefined);
    await store.close();
    throw listenError(err, config);
  }
  server.app.log.info(
    {
      address: `${address.address}:${address.port}`,
      baseUrl: config.baseUrl,
      console: `${config.baseUrl}/console/`,
      db: config.databaseUrl === "" ? config.dbPath : redactedDatabaseUrl(config.databaseUrl),
    },
    "gatehouse listening",
  );
  if (fresh) {
    // A first start: say the one step that makes the server usable.
    server.app.log.info(
      "no organization yet: create one and its owner's token on this machine with `node bin/gatehouse.js bootstrap --org <name>` (README, Calling it)",
    );
  }
  server.app.log.info({ signal: await stopSignal }, "shutting down");
  await server.close();
  await store.close();
  server.app.log.info("stopped");
  return 0;
}

/** Whether the database holds no group at all (a fresh installation). */
async function hasNoGroup(store: Store): Promise<boolean> {
  const page = await store.listGroups({
    filters: {},
    order: { field: "uid", desc: false },
    skip: 0,
    limit: 1,
  });
  return page.items.length === 0;
}

function checkReadable(path: string, setting: string): void {
  if (path === "") return;
  try {
    accessSync(path, constants.R_OK);
  } catch {
    throw new ConfigError(`${setting}: cannot read ${JSON.stringify(path)}`);
  }
}

async function openStore(config: Config, onCheckpointError: (err: Error) => void): Promise<Store> {
  if (config.databaseUrl !== "") {
    // Loaded only for PostgreSQL: a server on an SQLite file need not load pg and the
    // PostgreSQL store (46 of the 1,054 modules `gatehouse serve` loaded).
    const { createPostgresStore } = await import("../store/postgres/pg-store.js");
    try {
      return await createPostgresStore(config.databaseUrl, {
        roles: storeRoles,
        timeoutMs: config.dbTimeoutMs,
        heartbeatMs: config.dbHeartbeatMs,
        onFeedState: (up, err) => onFeedState?.(up, err),
      });
    } catch (err) {
      throw new ConfigError(
        `GATEHOUSE_DATABASE_URL (--database-url): cannot use ${redactedDatabaseUrl(config.databaseUrl)}: ${(err as Error).message}`,
      );
    }
  }
  try {
    return createSqliteStore(config.dbPath, {
      roles: storeRoles,
      backgroundCheckpoints: { onError: onCheckpointError },
    });
  } catch (err) {
    throw new ConfigError(
      `GATEHOUSE_DB (--db): cannot use ${JSON.stringify(config.dbPath)} as the database: ${(err as Error).message}`,
    );
  }
}

/** The one-line reason a listen failed, naming the setting to change. */
function listenError(err: unknown, config: Config): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case "EADDRINUSE":
      return new ConfigError(
        `GATEHOUSE_PORT (--port): port ${config.port} on ${config.host} is already in use`,
      );
    case "EACCES":
      return new ConfigError(
        `GATEHOUSE_PORT (--port): not allowed to listen on port ${config.port}`,
      );
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return new ConfigError(
        `GATEHOUSE_HOST (--host): cannot listen on ${JSON.stringify(config.host)} (${code})`,
      );
    default:
      return err;
  }
}
