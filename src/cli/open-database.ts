import { accessSync, constants, existsSync, statSync } from "node:fs";
import { storeRoles } from "../auth/capabilities.js";
import { type Config, redactedDatabaseUrl } from "../config.js";
import { createSqliteStore, type SqliteStore } from "../store/sqlite/sqlite-store.js";
import type { Store } from "../store/store.js";
import { CliError } from "./cli-io.js";
import { checkDatabaseFile } from "./database-file.js";

/**
 * Open the database a command works on: PostgreSQL when GATEHOUSE_DATABASE_URL is set (the
 * schema must exist: a server has run on it, unless `create`), else the SQLite file (below).
 * Throws CliError (exit 2) saying why not.
 */
export async function openCommandDatabase(
  config: Pick<Config, "dbPath" | "databaseUrl" | "allowReadableDb">,
  opts: { create: boolean },
): Promise<Store> {
  if (config.databaseUrl === "") {
    return openDatabase(config.dbPath, {
      create: opts.create,
      allowReadable: config.allowReadableDb,
    });
  }
  // Loaded only for PostgreSQL: a command on an SQLite file need not load pg and the
  // PostgreSQL store (46 modules: a bootstrap on SQLite took 0.72 s of CPU with them, 0.55 s).
  const { createPostgresStore } = await import("../store/postgres/pg-store.js");
  try {
    // A one-shot command needs no change feed: it caches nothing for long.
    return await createPostgresStore(config.databaseUrl, { roles: storeRoles, listen: false });
  } catch (err) {
    throw new CliError(
      `cannot open database ${redactedDatabaseUrl(config.databaseUrl)} (GATEHOUSE_DATABASE_URL): ${(err as Error).message}`,
    );
  }
}

/** Where a command's data lives, for messages: the SQLite path or the redacted URL. */
export function databaseName(config: Pick<Config, "dbPath" | "databaseUrl">): string {
  return config.databaseUrl === "" ? config.dbPath : redactedDatabaseUrl(config.databaseUrl);
}

/**
 * Open the server's SQLite database for a command, or throw CliError (exit 2) saying why not:
 * an in-memory database (it would vanish with the command), a missing file unless `create`
 * (a typo would otherwise make a fresh, empty database), a path that is not a readable and
 * writable file, or a file SQLite cannot use.
 */
export function openDatabase(
  path: string,
  opts: { create: boolean; allowReadable?: boolean },
): SqliteStore {
  if (path === "" || path === ":memory:" || path.startsWith("file:")) {
    throw new CliError(
      `the database must be a file the server also uses (GATEHOUSE_DB or --db), not ${JSON.stringify(path)}`,
    );
  }
  if (existsSync(path)) {
    if (!statSync(path).isFile()) throw new CliError(`cannot open database ${path}: not a file`);
    try {
      accessSync(path, constants.R_OK | constants.W_OK);
    } catch {
      throw new CliError(`cannot open database ${path}: not readable and writable by this user`);
    }
  } else if (!opts.create) {
    throw new CliError(
      `no database at ${path}: point GATEHOUSE_DB or --db at the server's database file`,
    );
  }
  let store: SqliteStore;
  try {
    store = createSqliteStore(path, { roles: storeRoles });
  } catch (err) {
    throw new CliError(`cannot open database ${path}: ${(err as Error).message}`);
  }
  try {
    checkDatabaseFile(path, opts.allowReadable ?? false);
  } catch (err) {
    void store.close();
    throw err;
  }
  return store;
}
