import type { GroupInviteRecord } from "../invite-store.js";
import { declareResource } from "./resource.js";
import type { StoredFlag } from "./stored-flag.js";

/** A group_invites_view row as both backends read it: the invite and its role's name. */
export interface InviteRow {
  uid: string;
  group_uid: string;
  role_uid: string;
  email: string;
  single_use: StoredFlag;
  expiration_time: number;
  creator_uid: string;
  create_time: number;
  update_time: number;
  role_name: string;
  role_description: string;
}

/**
 * An invite's storage: a child of its group, deleted with it; it goes with its role too (ON
 * DELETE CASCADE: it could grant nothing). Read through group_invites_view, which adds its
 * role's name and leaves the code's hash out, so that reads never carry it.
 */
export const groupInvites = declareResource<InviteRow, GroupInviteRecord>({
  kind: "group invite",
  collection: "groupInvites",
  message: "gatehouse.iam.v2beta1.GroupInvite",
  table: "group_invites",
  view: "group_invites_view",
  columns: {
    uid: { field: "uid" },
    group_uid: { internal: "the parent group, also the uid's prefix" },
    role_uid: { field: "role_uid" },
    email: { field: "email", updated: true },
    single_use: { field: "single_use", updated: true },
    // Only the SHA-256 of the code is kept: the code itself is shown once, at creation.
    code_hash: { field: "code", unsortable: "the hash of the invite's secret code" },
    expiration_time: { field: "expiration_time", updated: true },
    creator_uid: { field: "creator_uid" },
    create_time: { field: "create_time" },
    update_time: { field: "update_time" },
    role_name: { field: "role", fromView: true },
    role_description: { field: "role", fromView: true },
  },
  computed: {
    link: "output only: the console link of the code, in Create's answer alone",
    ttl: "input only: the expiration time is the creation's plus the ttl",
    state: "from the expiration time and the creator's authority, when served",
  },
  parent: { kind: "group", column: "group_uid", onDelete: "cascade" },
  list: { name: "role_name" },
  recordOf: inviteRecordOf,
});

/** The record of a stored invite. */
export function inviteRecordOf(row: InviteRow): GroupInviteRecord {
  return {
    uid: row.uid,
    groupUid: row.group_uid,
    roleUid: row.role_uid,
    role: { uid: row.role_uid, name: row.role_name, description: row.role_description },
    email: row.email,
    singleUse: Boolean(row.single_use),
    expirationTime: row.expiration_time,
    creatorUid: row.creator_uid,
    createTime: row.create_time,
    updateTime: row.update_time,
  };
}

/**
 * Where the list SQL of either backend finds the columns of invites.
 * The view's name is the role's: invites have no name of their own.
 */
export const inviteListColumns = groupInvites.listColumns;
