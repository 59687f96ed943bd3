import type { ClaimMatchRecord, IdentityRecord, StaticKeysRecord } from "../iam-store.js";
import { declareResource } from "./resource.js";

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

/**
 * An identity's storage: a child of its group, whose delete it blocks (a person's root
 * identity has none). Its bindings go with it (deleteIdentity).
 */
export const identities = declareResource<IdentityRow, IdentityRecord>({
  kind: "identity",
  collection: "identities",
  message: "gatehouse.iam.v2beta1.Identity",
  table: "identities",
  columns: {
    uid: { field: "uid" },
    group_uid: { internal: "the parent group (NULL for a person), also the uid's prefix" },
    name: { field: "name", updated: true },
    description: { field: "description", updated: true },
    email: {
      field: "email",
      unsortable: "a person's email: where it falls would tell a reader not shown it",
    },
    // The method's issuer and subject, or a person's from their logins: what a binding shows
    // of its identity, read without parsing the method.
    issuer: { internal: "the method's issuer, repeated for role bindings' views", updated: true },
    subject: { internal: "the method's subject, repeated for role bindings' views", updated: true },
    claim_match: { field: "claim_match", updated: true },
    static_keys: { field: "static_keys", updated: true },
    last_seen_time: { field: "last_seen_time" },
    create_time: { field: "create_time" },
    update_time: { field: "update_time" },
  },
  parent: { kind: "group", column: "group_uid", onDelete: "block" },
  recordOf: identityRecordOf,
});

/** The record of a stored identity. */
export function identityRecordOf(row: IdentityRow): IdentityRecord {
  return {
    uid: row.uid,
    groupUid: row.group_uid ?? "",
    name: row.name,
    description: row.description,
    email: row.email,
    lastSeenTime: row.last_seen_time,
    ...(row.group_uid === null ? { signIn: { issuer: row.issuer, subject: row.subject } } : {}),
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
export const identityListColumns = identities.listColumns;
