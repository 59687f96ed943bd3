import type { GroupInviteRecord } from "../invite-store.js";
import type { ListColumns } from "../list-clauses.js";
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
export const inviteListColumns: ListColumns = {
  table: "group_invites_view",
  uid: "uid",
  parent: "group_uid",
  group: "group_uid",
  name: "role_name",
  sort: { name: "role_name", create_time: "create_time", update_time: "update_time", uid: "uid" },
};
