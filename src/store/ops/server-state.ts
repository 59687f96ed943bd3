import { type KeyRow, signingKeyRecordOf } from "../rows/signing-key-rows.js";
import { notFoundError, type SigningKeyRecord, StoreError } from "../store.js";
import { exists, lookup, type OpsOf, one, read, rows, run, write } from "./operation.js";

function* secret(name: string) {
  return (yield* one<{ value: Buffer }>("SELECT value FROM secrets WHERE name = ?", name))?.value;
}

// The server's own state (its token signing keys, secrets and settings) decides no access
// answer: its writes leave the access caches warm.
const neutral = { accessNeutral: true };

/** The signing keys, server secrets and settings of both backends. */
export const serverStateOps = {
  // Ordered by time then kid, the order in which every process picks the same newest key.
  listSigningKeys: read(function* () {
    return (yield* rows<KeyRow>("SELECT * FROM signing_keys ORDER BY create_time, kid")).map(
      signingKeyRecordOf,
    );
  }),

  addSigningKey: write(function* (key: SigningKeyRecord) {
    if (yield* exists("SELECT 1 FROM signing_keys WHERE kid = ?", key.kid)) {
      throw new StoreError("already_exists", `signing key ${JSON.stringify(key.kid)}`);
    }
    yield* run(
      "INSERT INTO signing_keys (kid, private_jwk, public_jwk, create_time) VALUES (?, ?, ?, ?)",
      key.kid,
      key.privateJwk,
      key.publicJwk,
      key.createTime,
    );
  }, neutral),

  // One statement, so "the newest key" cannot change between finding it and deleting the rest.
  // Upkeep, no event: addSigningKey is the change (a rotation's new key).
  pruneSigningKeys: write(
    function* (before: number) {
      yield* run(
        `DELETE FROM signing_keys WHERE create_time < ? AND kid <> (
           SELECT kid FROM signing_keys ORDER BY create_time DESC, kid DESC LIMIT 1)`,
        before,
      );
    },
    { ...neutral, bookkeeping: true },
  ),

  setSigningKeyTime: write(function* (kid: string, createTime: number) {
    if (
      (yield* run("UPDATE signing_keys SET create_time = ? WHERE kid = ?", createTime, kid)) === 0
    ) {
      throw notFoundError("signing key", kid);
    }
  }, neutral),

  // Every process and replica must use the same secret (page tokens minted by one are accepted
  // by all): the first insert wins, and everyone, the loser of a race included, reads the
  // winner's. A get that may create: it commits at once rather than wait for a batch.
  getOrCreateSecret: write(
    function* (name: string, make: () => Buffer) {
      const existing = yield* secret(name);
      if (existing) return existing;
      yield* run(
        "INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
        name,
        make(),
      );
      return (yield* secret(name))!;
    },
    { ...neutral, ownCommit: true, bookkeeping: true },
  ),

  getSetting: lookup(
    "SELECT value FROM settings WHERE name = ?",
    (row: { value: string }) => row.value,
  ),

  putSetting: write(
    function* (name: string, value: string) {
      yield* run(
        `INSERT INTO settings (name, value) VALUES (?, ?)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
        name,
        value,
      );
    },
    { ...neutral, bookkeeping: true },
  ),
} satisfies OpsOf<
  | "listSigningKeys"
  | "addSigningKey"
  | "pruneSigningKeys"
  | "setSigningKeyTime"
  | "getOrCreateSecret"
  | "getSetting"
  | "putSetting"
>;
