import type { PgDb, PgOps } from "./pg-db.js";

/** The server-secret and setting operations of the PostgreSQL store. */
export type PgSecretOps = PgOps<"getOrCreateSecret" | "getSetting" | "putSetting">;

/** Create the server-secret operations on a migrated database. */
export function createPgSecretOps(db: PgDb): PgSecretOps {
  const get = async (name: string) =>
    (await db.sql.one<{ value: Buffer }>("SELECT value FROM secrets WHERE name = $1", [name]))
      ?.value;
  return {
    // Every replica must use the same secret (page tokens minted by one are accepted by all):
    // the first insert wins, and everyone, the loser of a race included, reads the winner's.
    getOrCreateSecret: async (name, make) => {
      const existing = await get(name);
      if (existing) return existing;
      await db.sql.run(
        "INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
        [name, make()],
      );
      return (await get(name))!;
    },
    getSetting: async (name) =>
      (await db.sql.one<{ value: string }>("SELECT value FROM settings WHERE name = $1", [name]))
        ?.value,
    putSetting: async (name, value) => {
      await db.sql.run(
        `INSERT INTO settings (name, value) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
        [name, value],
      );
    },
  };
}
