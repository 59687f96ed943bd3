import type { ClaimMatchRecord, IdentityRecord, StaticKeysRecord } from "../iam-store.js";
import type { ListColumns } from "../list-clauses.js";

/** An identities row as both backends store it (a person's root identity has no group). */
export interface IdentityRow {
  uid: string;
  group_uid: string | null;
  name: string;
  description: string;
  email: string;
  issuer: string;
  subject: string;
  claim_match: string | null;
  static_keys: string | null;
  last_seen_time: number;
  create_time: number;
  update_time: number;
}

/** The stored columns of an identity's method; claimMatch wins if both are given. */
export function methodColumns(cm: ClaimMatchRecord | undefined, sk: StaticKeysRecord | undefined) {
  if (cm) {
    return {
      claimMatch: JSON.stringify(cm),
      staticKeys: null,
      issuer: cm.issuer || cm.issuerPattern,
      subject: cm.subject || cm.subjectPattern,
    };
  }
  if (sk) {
    return {
      claimMatch: null,
      staticKeys: JSON.stringify(sk),
      issuer: sk.issuer,
      subject: sk.subject,
    };
  }
  return { claimMatch: null, staticKeys: null, issuer: "", subject: "" };
}

/** The record of a stored identity. */
export function identityRecordOf(row: IdentityRow): IdentityRecord {
  return {
    uid: row.uid,
    groupUid: row.group_uid ?? "",
    name: row.name,
    description: row.description,
    email: row.email,
    lastSeenTime: row.last_seen_time,
    ...(row.claim_match === null
      ? {}
      : { claimMatch: JSON.parse(row.claim_match) as ClaimMatchRecord }),
    ...(row.static_keys === null
      ? {}
      : { staticKeys: JSON.parse(row.static_keys) as StaticKeysRecord }),
    createTime: row.create_time,
    updateTime: row.update_time,
  };
}

/** Where the list SQL of either backend finds the columns of identities. */
export const identityListColumns: ListColumns = {
  table: "identities",
  uid: "uid",
  parent: "group_uid",
  group: "group_uid",
  name: "name",
  sort: { name: "name", create_time: "create_time", update_time: "update_time", uid: "uid" },
};
