import { parentOf } from "../../uid.js";
import { sameEmail } from "../email.js";
import type {
  GroupInvitePatch,
  InviteRedemption,
  NewGroupInvite,
  RedeemOutcome,
} from "../invite-store.js";
import { isEmptyPatch } from "../patch.js";
import { groupInvites, type InviteRow, inviteRecordOf } from "../rows/group-invite-rows.js";
import { insertOnly, updateOnly } from "../rows/resource.js";
import { roleBindingRecordOf, roleBindings } from "../rows/role-binding-rows.js";
import { notFoundError, StoreError } from "../store.js";
import { mustExist } from "./must-exist.js";
import { exists, list, lookup, type OpsOf, one, run, type Steps, write } from "./operation.js";
import { findBinding } from "./role-bindings.js";

const selectInvite = groupInvites.select;
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
    yield* insertOnly(groupInvites, {
      uid: i.uid,
      group_uid: i.groupUid,
      role_uid: i.roleUid,
      email: i.email,
      single_use: i.singleUse,
      code_hash: i.codeHash,
      expiration_time: i.expirationTime,
      creator_uid: i.creatorUid,
      create_time: i.now,
      update_time: i.now,
    });
    return inviteRecordOf((yield* find(i.uid))!);
  }, neutral),

  getGroupInvite: lookup(selectInvite, inviteRecordOf),

  findGroupInviteByCode: lookup(selectInviteByHash, inviteRecordOf),

  updateGroupInvite: write(function* (uid: string, patch: GroupInvitePatch, now: number) {
    const row = yield* find(uid);
    if (!row) throw notFoundError("group invite", uid);
    if (isEmptyPatch(patch)) return inviteRecordOf(row);
    yield* updateOnly(groupInvites, uid, {
      email: patch.email ?? row.email,
      single_use: patch.singleUse ?? Boolean(row.single_use),
      expiration_time: patch.expirationTime ?? row.expiration_time,
      update_time: now,
    });
    return inviteRecordOf((yield* find(uid))!);
  }, neutral),

  deleteGroupInvite: write(function* (uid: string) {
    if ((yield* run("DELETE FROM group_invites WHERE uid = ?", uid)) === 0) {
      throw notFoundError("group invite", uid);
    }
  }, neutral),

  listGroupInvites: list(groupInvites.listColumns, inviteRecordOf),

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
    yield* insertOnly(roleBindings, {
      uid,
      group_uid: row.group_uid,
      identity_uid: r.identityUid,
      team_uid: null,
      role_uid: row.role_uid,
      create_time: r.now,
      update_time: r.now,
    });
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
