import type { Database } from "better-sqlite3";
import { type KeyRow, signingKeyRecordOf } from "../rows/signing-key-rows.js";
import { type SigningKeyRecord, StoreError } from "../store.js";
import type { SyncOps } from "./sync-ops.js";

/** The signing-key operations of the SQLite store. */
export type SigningKeyOps = SyncOps<SyncOpsKeys>;
type SyncOpsKeys = "listSigningKeys" | "addSigningKey" | "pruneSigningKeys" | "setSigningKeyTime";

/** Create the signing-key operations on an open, migrated database. */
export function createSigningKeyOps(db: Database): SigningKeyOps {
  // Ordered by time then kid, the order in which every process picks the same newest key.
  const list = db.prepare("SELECT * FROM signing_keys ORDER BY create_time, kid");
  const exists = db.prepare("SELECT 1 FROM signing_keys WHERE kid = ?");
  const insert = db.prepare(
    `INSERT INTO signing_keys (kid, private_jwk, public_jwk, create_time)
     VALUES (@kid, @privateJwk, @publicJwk, @createTime)`,
  );
  // One statement, so "the newest key" cannot change between finding it and deleting the rest.
  const prune = db.prepare(
    `DELETE FROM signing_keys WHERE create_time < ? AND kid <> (
       SELECT kid FROM signing_keys ORDER BY create_time DESC, kid DESC LIMIT 1)`,
  );

  const setTime = db.prepare("UPDATE signing_keys SET create_time = ? WHERE kid = ?");

  return {
    setSigningKeyTime: (kid, createTime) => {
      if (setTime.run(createTime, kid).changes === 0) {
        throw new StoreError("not_found", `signing key ${JSON.stringify(kid)}`);
      }
    },
    listSigningKeys: () => (list.all() as KeyRow[]).map(signingKeyRecordOf),
    addSigningKey: db.transaction((key: SigningKeyRecord) => {
      if (exists.get(key.kid)) {
        throw new StoreError("already_exists", `signing key ${JSON.stringify(key.kid)}`);
      }
      insert.run(key);
    }).immediate,
    pruneSigningKeys: (before) => {
      prune.run(before);
    },
  };
}
