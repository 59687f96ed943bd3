import { parentOf } from "../../uid.js";
import { isEmptyPatch } from "../patch.js";
import {
  type IdentityRow,
  identityListColumns,
  identityRecordOf,
  methodColumns,
} from "../rows/identity-rows.js";
import { StoreError } from "../store.js";
import type { PgLastOwnerGuard } from "./last-owner.js";
import { createPgListSql } from "./list-sql.js";
import type { PgDb, PgOps, Sql } from "./pg-db.js";

/** The identity operations of the PostgreSQL store. */
export type PgIdentityOps = PgOps<
  | "createIdentity"
  | "getIdentity"
  | "updateIdentity"
  | "deleteIdentity"
  | "listIdentities"
  | "touchIdentity"
  | "upsertPerson"
>;

/** Create the identity operations on a migrated database. */
export function createPgIdentityOps(db: PgDb, lastOwner: PgLastOwnerGuard): PgIdentityOps {
  const find = (sql: Sql, uid: string) =>
    sql.one<IdentityRow>("SELECT * FROM identities WHERE uid = $1", [uid]);
  const mustFind = async (sql: Sql, uid: string) => {
    const row = await find(sql, uid);
    if (!row) throw new StoreError("not_found", `identity ${JSON.stringify(uid)}`);
    return row;
  };
  const lists = createPgListSql<IdentityRow>(db, identityListColumns);

  return {
    createIdentity: (i) =>
      db.write(async (sql) => {
        if (parentOf(i.uid) !== i.groupUid || i.groupUid === "") {
          throw new Error(`identity uid ${i.uid} is not a direct child of ${i.groupUid}`);
        }
        if (!(await sql.one("SELECT 1 FROM groups WHERE uid = $1", [i.groupUid]))) {
          throw new StoreError("not_found", `group ${JSON.stringify(i.groupUid)}`);
        }
        if (await find(sql, i.uid)) {
          throw new StoreError("already_exists", `identity ${JSON.stringify(i.uid)}`);
        }
        const m = methodColumns(i.claimMatch, i.staticKeys);
        const row = await sql.one<IdentityRow>(
          `INSERT INTO identities (uid, group_uid, name, description, issuer, subject, claim_match,
             static_keys, last_seen_time, create_time, update_time)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $9) RETURNING *`,
          [
            i.uid,
            i.groupUid,
            i.name,
            i.description,
            m.issuer,
            m.subject,
            m.claimMatch,
            m.staticKeys,
            i.now,
          ],
        );
        return identityRecordOf(row!);
      }),

    getIdentity: async (uid) => {
      const row = await find(db.sql, uid);
      return row && identityRecordOf(row);
    },

    updateIdentity: (uid, patch, now) =>
      db.write(async (sql) => {
        const row = await mustFind(sql, uid);
        const current = identityRecordOf(row);
        if (isEmptyPatch(patch)) return current;
        const method =
          patch.claimMatch || patch.staticKeys
            ? methodColumns(patch.claimMatch, patch.staticKeys)
            : methodColumns(current.claimMatch, current.staticKeys);
        // A person's issuer and subject come from logins, not from a method.
        const identifying = current.groupUid === "" ? row : method;
        const updated = await sql.one<IdentityRow>(
          `UPDATE identities SET name = $1, description = $2, issuer = $3, subject = $4,
             claim_match = $5, static_keys = $6, update_time = $7
           WHERE uid = $8 RETURNING *`,
          [
            patch.name ?? current.name,
            patch.description ?? current.description,
            identifying.issuer,
            identifying.subject,
            method.claimMatch,
            method.staticKeys,
            now,
            uid,
          ],
        );
        return identityRecordOf(updated!);
      }),

    deleteIdentity: (uid) =>
      db.write(async (sql) => {
        await mustFind(sql, uid);
        await lastOwner.identity(sql, uid);
        await sql.run("DELETE FROM role_bindings WHERE identity_uid = $1", [uid]);
        await sql.run("DELETE FROM identities WHERE uid = $1", [uid]);
      }),

    listIdentities: async (query) => {
      const page = await lists.list(query);
      return { items: page.rows.map(identityRecordOf), total: page.total, hasMore: page.hasMore };
    },

    touchIdentity: async (uid, time) => {
      // One autocommit statement outside db.write: no access answer depends on lastSeenTime,
      // and every token exchange writes it, so it must not empty every replica's access cache.
      const changes = await db.sql.run("UPDATE identities SET last_seen_time = $1 WHERE uid = $2", [
        time,
        uid,
      ]);
      if (changes === 0) throw new StoreError("not_found", `identity ${JSON.stringify(uid)}`);
    },

    upsertPerson: (p) =>
      db.write(async (sql) => {
        if (parentOf(p.uid) !== "") throw new Error(`person uid ${p.uid} is not a root uid`);
        // A person's root identity has no group and no method; a later login refreshes what the
        // issuer says about the person.
        await sql.run(
          `INSERT INTO identities (uid, group_uid, name, description, email, issuer, subject,
             last_seen_time, create_time, update_time)
           VALUES ($1, NULL, $2, '', $3, $4, $5, $6, $6, $6)
           ON CONFLICT (uid) DO UPDATE SET name = EXCLUDED.name, email = EXCLUDED.email,
             last_seen_time = EXCLUDED.last_seen_time, update_time = EXCLUDED.update_time
           WHERE identities.group_uid IS NULL`,
          [p.uid, p.name, p.email, p.issuer, p.subject, p.now],
        );
        return identityRecordOf((await find(sql, p.uid))!);
      }),
  };
}
