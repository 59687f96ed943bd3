import { statSync } from "node:fs";
import { ConfigError } from "../config.js";

/**
 * Refuse a database file that other users can read or write: it holds the private keys that
 * sign Gatehouse tokens, so whoever reads it can mint an owner's token. Checks the file and
 * its WAL and shared-memory files, where they exist; an in-memory database has none.
 * Throws ConfigError naming the setting, unless `allowReadable`.
 */
export function checkDatabaseFile(path: string, allowReadable: boolean): void {
  if (allowReadable || path === "" || path === ":memory:" || path.startsWith("file:")) return;
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    let mode: number;
    try {
      mode = statSync(file).mode;
    } catch {
      continue; // missing: created owner-only by the store
    }
    if ((mode & 0o077) !== 0) {
      const octal = (mode & 0o777).toString(8).padStart(4, "0");
      throw new ConfigError(
        `GATEHOUSE_DB (--db): ${file} is open to other users (mode ${octal}) and holds the ` +
          "token signing keys; run chmod 600 on it, or set GATEHOUSE_ALLOW_READABLE_DB=true " +
          "(--allow-readable-db) to start anyway",
      );
    }
  }
}
