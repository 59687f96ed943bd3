import { type KeyRow, signingKeyRecordOf } from "../rows/signing-key-rows.js";
import { StoreError } from "../store.js";
import type { PgDb, PgOps } from "./pg-db.js";
import { sqlState } from "./pg-db.js";

/** The signing-key operations of the PostgreSQL store. */
export type PgSigningKeyOps = PgOps<
  "listSigningKeys" | "addSigningKey" | "pruneSigningKeys" | "setSigningKeyTime"
>;

/** Create the signing-key operations on a migrated database. */
export function createPgSigningKeyOps(db: PgDb): PgSigningKeyOps {
  return {
    setSigningKeyTime: async (kid, createTime) => {
      const rows = await db.sql.rows<{ kid: string }>(
        "UPDATE signing_keys SET create_time = $1 WHERE kid = $2 RETURNING kid",
        [createTime, kid],
      );
      if (rows.length === 0)
        throw new StoreError("not_found", `signing key ${JSON.stringify(kid)}`);
    },
    // Ordered by time then kid, the order in which every replica picks the same newest key.
    listSigningKeys: async () =>
      (await db.sql.rows<KeyRow>("SELECT * FROM signing_keys ORDER BY create_time, kid")).map(
        signingKeyRecordOf,
      ),
    addSigningKey: async (key) => {
      try {
        await db.sql.run(
          `INSERT INTO signing_keys (kid, private_jwk, public_jwk, create_time)
           VALUES ($1, $2, $3, $4)`,
          [key.kid, key.privateJwk, key.publicJwk, key.createTime],
        );
      } catch (err) {
        const cause = (err as { cause?: unknown }).cause ?? err;
        if (sqlState(cause) === "23505") {
          throw new StoreError("already_exists", `signing key ${JSON.stringify(key.kid)}`);
        }
        throw err;
      }
    },
    // One statement, so "the newest key" cannot change between finding it and deleting the rest.
    pruneSigningKeys: async (before) => {
      await db.sql.run(
        `DELETE FROM signing_keys WHERE create_time < $1 AND kid <> (
           SELECT kid FROM signing_keys ORDER BY create_time DESC, kid DESC LIMIT 1)`,
        [before],
      );
    },
  };
}
