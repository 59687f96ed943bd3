import type { Database } from "better-sqlite3";
import { parentOf } from "../../uid.js";
import { sameEmail } from "../email.js";
import type { RoleBindingRecord } from "../iam-store.js";
import type {
  GroupInvitePatch,
  InviteRedemption,
  NewGroupInvite,
  RedeemOutcome,
} from "../invite-store.js";
import { isEmptyPatch } from "../patch.js";
import { type InviteRow, inviteListColumns, inviteRecordOf } from "../rows/group-invite-rows.js";
import { StoreError } from "../store.js";
import { createListSql } from "./list-sql.js";
import type { SyncOps } from "./sync-ops.js";

/** The group-invite operations of the SQLite store. */
export type GroupInviteOps = SyncOps<
  | "createGroupInvite"
  | "getGroupInvite"
  | "findGroupInviteByCode"
  | "updateGroupInvite"
  | "deleteGroupInvite"
  | "listGroupInvites"
  | "redeemGroupInvite"
>;

/**
 * Create the group-invite operations on an open, migrated database. `getRoleBinding` hydrates
 * the binding a redemption made or found.
 */
export function createGroupInviteOps(
  db: Database,
  getRoleBinding: (uid: string) => RoleBindingRecord | undefined,
): GroupInviteOps {
  const get = db.prepare("SELECT * FROM group_invites_view WHERE uid = ?");
  const byHash = db.prepare(
    `SELECT v.* FROM group_invites_view AS v
     WHERE v.uid = (SELECT uid FROM group_invites WHERE code_hash = ?)`,
  );
  const exists = {
    group: db.prepare("SELECT 1 FROM groups WHERE uid = ?"),
    role: db.prepare("SELECT 1 FROM roles WHERE uid = ?"),
    identity: db.prepare("SELECT 1 FROM identities WHERE uid = ?"),
    invite: db.prepare("SELECT 1 FROM group_invites WHERE uid = ? OR code_hash = ?"),
  };
  const insert = db.prepare(
    `INSERT INTO group_invites (uid, group_uid, role_uid, email, single_use, code_hash,
       expiration_time, creator_uid, create_time, update_time)
     VALUES (@uid, @groupUid, @roleUid, @email, @singleUse, @codeHash, @expirationTime,
       @creatorUid, @now, @now)`,
  );
  const update = db.prepare(
    `UPDATE group_invites SET email = ?, single_use = ?, expiration_time = ?, update_time = ?
     WHERE uid = ?`,
  );
  const remove = db.prepare("DELETE FROM group_invites WHERE uid = ?");
  const existingBinding = db.prepare(
    "SELECT uid FROM role_bindings WHERE identity_uid = ? AND group_uid = ? AND role_uid = ?",
  );
  const insertBinding = db.prepare(
    `INSERT INTO role_bindings (uid, group_uid, identity_uid, role_uid, create_time, update_time)
     VALUES (?, ?, ?, ?, ?, ?)`,
  );
  const lists = createListSql<InviteRow>(db, inviteListColumns);

  const find = (uid: string) => get.get(uid) as InviteRow | undefined;
  const mustExist = (kind: "group" | "role" | "identity", uid: string) => {
    if (!exists[kind].get(uid)) throw new StoreError("not_found", `${kind} ${JSON.stringify(uid)}`);
  };

  return {
    createGroupInvite: db.transaction((i: NewGroupInvite) => {
      if (parentOf(i.uid) !== i.groupUid || i.groupUid === "") {
        throw new Error(`group invite uid ${i.uid} is not a direct child of ${i.groupUid}`);
      }
      mustExist("group", i.groupUid);
      mustExist("role", i.roleUid);
      // One message for a taken uid and a taken hash: neither says anything about the code.
      if (exists.invite.get(i.uid, i.codeHash)) {
        throw new StoreError("already_exists", `group invite ${JSON.stringify(i.uid)}`);
      }
      insert.run({ ...i, singleUse: i.singleUse ? 1 : 0 });
      return inviteRecordOf(find(i.uid)!);
    }).immediate,

    getGroupInvite: (uid) => {
      const row = find(uid);
      return row && inviteRecordOf(row);
    },

    findGroupInviteByCode: (codeHash) => {
      const row = byHash.get(codeHash) as InviteRow | undefined;
      return row && inviteRecordOf(row);
    },

    updateGroupInvite: db.transaction((uid: string, patch: GroupInvitePatch, now: number) => {
      const row = find(uid);
      if (!row) throw new StoreError("not_found", `group invite ${JSON.stringify(uid)}`);
      if (isEmptyPatch(patch)) return inviteRecordOf(row);
      const singleUse = patch.singleUse ?? row.single_use !== 0;
      update.run(
        patch.email ?? row.email,
        singleUse ? 1 : 0,
        patch.expirationTime ?? row.expiration_time,
        now,
        uid,
      );
      return inviteRecordOf(find(uid)!);
    }).immediate,

    deleteGroupInvite: (uid) => {
      if (remove.run(uid).changes === 0) {
        throw new StoreError("not_found", `group invite ${JSON.stringify(uid)}`);
      }
    },

    listGroupInvites: (query) => {
      const page = lists.list(query);
      return { items: page.rows.map(inviteRecordOf), total: page.total, hasMore: page.hasMore };
    },

    // Immediate: the write lock is taken before the invite is read, so that of two concurrent
    // redemptions of a single-use code the second finds it gone.
    redeemGroupInvite: db.transaction((r: InviteRedemption): RedeemOutcome => {
      const row = byHash.get(r.codeHash) as InviteRow | undefined;
      if (!row || row.expiration_time <= r.now) return { kind: "not_found" };
      if (row.email !== "" && !sameEmail(row.email, r.email)) {
        return { kind: "email_mismatch" };
      }
      mustExist("identity", r.identityUid);
      if (row.single_use !== 0) remove.run(row.uid);
      const found = existingBinding.get(r.identityUid, row.group_uid, row.role_uid) as
        | { uid: string }
        | undefined;
      if (found) return { kind: "redeemed", binding: getRoleBinding(found.uid)!, created: false };
      const uid = r.bindingUid(row.group_uid);
      if (parentOf(uid) !== row.group_uid) {
        throw new Error(`role binding uid ${uid} is not a direct child of ${row.group_uid}`);
      }
      insertBinding.run(uid, row.group_uid, r.identityUid, row.role_uid, r.now, r.now);
      return { kind: "redeemed", binding: getRoleBinding(uid)!, created: true };
    }).immediate,
  };
}
