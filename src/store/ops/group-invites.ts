import { parentOf } from "../../uid.js";
import { sameEmail } from "../email.js";
import type {
  GroupInvitePatch,
  InviteRedemption,
  NewGroupInvite,
  RedeemOutcome,
} from "../invite-store.js";
import { isEmptyPatch } from "../patch.js";
import { type InviteRow, inviteListColumns, inviteRecordOf } from "../rows/group-invite-rows.js";
import { roleBindingRecordOf } from "../rows/role-binding-rows.js";
import { notFoundError, StoreError } from "../store.js";
import { mustExist } from "./must-exist.js";
import { exists, list, lookup, type OpsOf, one, run, type Steps, write } from "./operation.js";
import { findBinding } from "./role-bindings.js";

const selectInvite = "SELECT * FROM group_invites_view WHERE uid = ?";
const selectInviteByHash = `SELECT v.* FROM group_invites_view AS v
  WHERE v.uid = (SELECT uid FROM group_invites WHERE code_hash = ?)`;

function* find(uid: string): Steps<InviteRow | undefined> {
  return yield* one<InviteRow>(selectInvite, uid);
}

function* findByHash(codeHash: string): Steps<InviteRow | undefined> {
  return yield* one<InviteRow>(selectInviteByHash, codeHash);
}

function* binding(uid: string) {
  return roleBindingRecordOf((yield* findBinding(uid))!);
}

// An invite grants nothing until redeemed: its writes leave the access caches warm.
const neutral = { accessNeutral: true };

/** The group-invite operations of both backends. */
export const groupInviteOps = {
  createGroupInvite: write(function* (i: NewGroupInvite) {
    if (parentOf(i.uid) !== i.groupUid || i.groupUid === "") {
      throw new Error(`group invite uid ${i.uid} is not a direct child of ${i.groupUid}`);
    }
    yield* mustExist("group", i.groupUid);
    yield* mustExist("role", i.roleUid);
    // One message for a taken uid and a taken hash: neither says anything about the code.
    if (
      yield* exists("SELECT 1 FROM group_invites WHERE uid = ? OR code_hash = ?", i.uid, i.codeHash)
    ) {
      throw new StoreError("already_exists", `group invite ${JSON.stringify(i.uid)}`);
    }
    yield* run(
      `INSERT INTO group_invites (uid, group_uid, role_uid, email, single_use, code_hash,
         expiration_time, creator_uid, create_time, update_time)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      i.uid,
      i.groupUid,
      i.roleUid,
      i.email,
      i.singleUse,
      i.codeHash,
      i.expirationTime,
      i.creatorUid,
      i.now,
      i.now,
    );
    return inviteRecordOf((yield* find(i.uid))!);
  }, neutral),

  getGroupInvite: lookup(selectInvite, inviteRecordOf),

  findGroupInviteByCode: lookup(selectInviteByHash, inviteRecordOf),

  updateGroupInvite: write(function* (uid: string, patch: GroupInvitePatch, now: number) {
    const row = yield* find(uid);
    if (!row) throw notFoundError("group invite", uid);
    if (isEmptyPatch(patch)) return inviteRecordOf(row);
    yield* run(
      `UPDATE group_invites SET email = ?, single_use = ?, expiration_time = ?, update_time = ?
       WHERE uid = ?`,
      patch.email ?? row.email,
      patch.singleUse ?? Boolean(row.single_use),
      patch.expirationTime ?? row.expiration_time,
      now,
      uid,
    );
    return inviteRecordOf((yield* find(uid))!);
  }, neutral),

  deleteGroupInvite: write(function* (uid: string) {
    if ((yield* run("DELETE FROM group_invites WHERE uid = ?", uid)) === 0) {
      throw notFoundError("group invite", uid);
    }
  }, neutral),

  listGroupInvites: list(inviteListColumns, inviteRecordOf),

  // One write transaction: SQLite's immediate one takes the write lock before the invite is
  // read, so of two concurrent redemptions of a single-use code the second finds it gone; of
  // two on PostgreSQL, both of which read the invite and delete it, one is aborted and its
  // retry finds the code gone.
  redeemGroupInvite: write(function* (r: InviteRedemption): Steps<RedeemOutcome> {
    const row = yield* findByHash(r.codeHash);
    if (!row || row.expiration_time <= r.now) return { kind: "not_found" };
    if (row.email !== "" && !sameEmail(row.email, r.email)) return { kind: "email_mismatch" };
    yield* mustExist("identity", r.identityUid);
    if (row.single_use) yield* run("DELETE FROM group_invites WHERE uid = ?", row.uid);
    const found = yield* one<{ uid: string }>(
      "SELECT uid FROM role_bindings WHERE identity_uid = ? AND group_uid = ? AND role_uid = ?",
      r.identityUid,
      row.group_uid,
      row.role_uid,
    );
    if (found) return { kind: "redeemed", binding: yield* binding(found.uid), created: false };
    const uid = r.bindingUid(row.group_uid);
    if (parentOf(uid) !== row.group_uid) {
      throw new Error(`role binding uid ${uid} is not a direct child of ${row.group_uid}`);
    }
    yield* run(
      `INSERT INTO role_bindings (uid, group_uid, identity_uid, role_uid, create_time, update_time)
       VALUES (?, ?, ?, ?, ?, ?)`,
      uid,
      row.group_uid,
      r.identityUid,
      row.role_uid,
      r.now,
      r.now,
    );
    return { kind: "redeemed", binding: yield* binding(uid), created: true };
  }),
} satisfies OpsOf<
  | "createGroupInvite"
  | "getGroupInvite"
  | "findGroupInviteByCode"
  | "updateGroupInvite"
  | "deleteGroupInvite"
  | "listGroupInvites"
  | "redeemGroupInvite"
>;
