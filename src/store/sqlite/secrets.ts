import type { Database } from "better-sqlite3";
import type { SyncOps } from "./sync-ops.js";

/** The server-secret operations of the SQLite store. */
export type SecretOps = SyncOps<"getOrCreateSecret" | "getSetting" | "putSetting">;

/** Create the server-secret operations on an open, migrated database. */
export function createSecretOps(db: Database): SecretOps {
  const get = db.prepare("SELECT value FROM secrets WHERE name = ?").pluck();
  const insert = db.prepare("INSERT INTO secrets (name, value) VALUES (?, ?)");

  // Under the write lock, the first process to get here creates the secret and every later
  // one (in this process or another on the same file) reads it back.
  const create = db.transaction((name: string, make: () => Buffer): Buffer => {
    const existing = get.get(name) as Buffer | undefined;
    if (existing) return existing;
    const value = make();
    insert.run(name, value);
    return value;
  }).immediate;

  const getSetting = db.prepare("SELECT value FROM settings WHERE name = ?").pluck();
  const putSetting = db.prepare(
    "INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
  );

  return {
    getSetting: (name) => getSetting.get(name) as string | undefined,
    putSetting: (name, value) => {
      putSetting.run(name, value);
    },
    // The common case, an existing secret, needs no write lock.
    getOrCreateSecret: (name, make) => (get.get(name) as Buffer | undefined) ?? create(name, make),
  };
}
