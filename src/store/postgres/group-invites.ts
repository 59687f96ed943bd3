import { parentOf } from "../../uid.js";
import { sameEmail } from "../email.js";
import type { RoleBindingRecord } from "../iam-store.js";
import type { RedeemOutcome } from "../invite-store.js";
import { isEmptyPatch } from "../patch.js";
import { type InviteRow, inviteListColumns, inviteRecordOf } from "../rows/group-invite-rows.js";
import { StoreError } from "../store.js";
import { createPgListSql } from "./list-sql.js";
import type { PgDb, PgOps, Sql } from "./pg-db.js";

/** The group-invite operations of the PostgreSQL store. */
export type PgGroupInviteOps = PgOps<
  | "createGroupInvite"
  | "getGroupInvite"
  | "findGroupInviteByCode"
  | "updateGroupInvite"
  | "deleteGroupInvite"
  | "listGroupInvites"
  | "redeemGroupInvite"
>;

const existsSql = {
  group: "SELECT 1 FROM groups WHERE uid = $1",
  role: "SELECT 1 FROM roles WHERE uid = $1",
  identity: "SELECT 1 FROM identities WHERE uid = $1",
};

/**
 * Create the group-invite operations on a migrated database. `getRoleBindingIn` hydrates the
 * binding a redemption made or found, inside the redemption's transaction.
 */
export function createPgGroupInviteOps(
  db: PgDb,
  getRoleBindingIn: (sql: Sql, uid: string) => Promise<RoleBindingRecord | undefined>,
): PgGroupInviteOps {
  const find = (sql: Sql, uid: string) =>
    sql.one<InviteRow>("SELECT * FROM group_invites_view WHERE uid = $1", [uid]);
  const findByHash = (sql: Sql, codeHash: string) =>
    sql.one<InviteRow>(
      `SELECT v.* FROM group_invites_view AS v
       WHERE v.uid = (SELECT uid FROM group_invites WHERE code_hash = $1)`,
      [codeHash],
    );
  const mustExist = async (sql: Sql, kind: keyof typeof existsSql, uid: string) => {
    if (!(await sql.one(existsSql[kind], [uid]))) {
      throw new StoreError("not_found", `${kind} ${JSON.stringify(uid)}`);
    }
  };
  const lists = createPgListSql<InviteRow>(db, inviteListColumns);

  return {
    createGroupInvite: (i) =>
      db.write(async (sql) => {
        if (parentOf(i.uid) !== i.groupUid || i.groupUid === "") {
          throw new Error(`group invite uid ${i.uid} is not a direct child of ${i.groupUid}`);
        }
        await mustExist(sql, "group", i.groupUid);
        await mustExist(sql, "role", i.roleUid);
        // One message for a taken uid and a taken hash: neither says anything about the code.
        if (
          await sql.one("SELECT 1 FROM group_invites WHERE uid = $1 OR code_hash = $2", [
            i.uid,
            i.codeHash,
          ])
        ) {
          throw new StoreError("already_exists", `group invite ${JSON.stringify(i.uid)}`);
        }
        await sql.run(
          `INSERT INTO group_invites (uid, group_uid, role_uid, email, single_use, code_hash,
             expiration_time, creator_uid, create_time, update_time)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
          [
            i.uid,
            i.groupUid,
            i.roleUid,
            i.email,
            i.singleUse,
            i.codeHash,
            i.expirationTime,
            i.creatorUid,
            i.now,
          ],
        );
        return inviteRecordOf((await find(sql, i.uid))!);
      }),

    getGroupInvite: async (uid) => {
      const row = await find(db.sql, uid);
      return row && inviteRecordOf(row);
    },

    findGroupInviteByCode: async (codeHash) => {
      const row = await findByHash(db.sql, codeHash);
      return row && inviteRecordOf(row);
    },

    updateGroupInvite: (uid, patch, now) =>
      db.write(async (sql) => {
        const row = await find(sql, uid);
        if (!row) throw new StoreError("not_found", `group invite ${JSON.stringify(uid)}`);
        if (isEmptyPatch(patch)) return inviteRecordOf(row);
        await sql.run(
          `UPDATE group_invites SET email = $1, single_use = $2, expiration_time = $3,
             update_time = $4
           WHERE uid = $5`,
          [
            patch.email ?? row.email,
            patch.singleUse ?? row.single_use,
            patch.expirationTime ?? row.expiration_time,
            now,
            uid,
          ],
        );
        return inviteRecordOf((await find(sql, uid))!);
      }),

    deleteGroupInvite: (uid) =>
      db.write(async (sql) => {
        if ((await sql.run("DELETE FROM group_invites WHERE uid = $1", [uid])) === 0) {
          throw new StoreError("not_found", `group invite ${JSON.stringify(uid)}`);
        }
      }),

    listGroupInvites: async (query) => {
      const page = await lists.list(query);
      return { items: page.rows.map(inviteRecordOf), total: page.total, hasMore: page.hasMore };
    },

    // One SERIALIZABLE transaction: of two concurrent redemptions of a single-use code, both
    // of which read the invite and delete it, one is aborted; its retry finds the code gone.
    redeemGroupInvite: (r) =>
      db.write(async (sql): Promise<RedeemOutcome> => {
        const row = await findByHash(sql, r.codeHash);
        if (!row || row.expiration_time <= r.now) return { kind: "not_found" };
        if (row.email !== "" && !sameEmail(row.email, r.email)) {
          return { kind: "email_mismatch" };
        }
        await mustExist(sql, "identity", r.identityUid);
        if (row.single_use) {
          await sql.run("DELETE FROM group_invites WHERE uid = $1", [row.uid]);
        }
        const found = await sql.one<{ uid: string }>(
          "SELECT uid FROM role_bindings WHERE identity_uid = $1 AND group_uid = $2 AND role_uid = $3",
          [r.identityUid, row.group_uid, row.role_uid],
        );
        if (found) {
          return {
            kind: "redeemed",
            binding: (await getRoleBindingIn(sql, found.uid))!,
            created: false,
          };
        }
        const uid = r.bindingUid(row.group_uid);
        if (parentOf(uid) !== row.group_uid) {
          throw new Error(`role binding uid ${uid} is not a direct child of ${row.group_uid}`);
        }
        await sql.run(
          `INSERT INTO role_bindings (uid, group_uid, identity_uid, role_uid, create_time,
             update_time)
           VALUES ($1, $2, $3, $4, $5, $5)`,
          [uid, row.group_uid, r.identityUid, row.role_uid, r.now],
        );
        return { kind: "redeemed", binding: (await getRoleBindingIn(sql, uid))!, created: true };
      }),
  };
}
