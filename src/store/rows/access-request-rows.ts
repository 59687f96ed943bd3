import type {
  AccessRequestFilters,
  AccessRequestRecord,
  StoredRequestState,
} from "../access-request-store.js";
import type { ListClause } from "../list-clauses.js";
import { declareResource } from "./resource.js";

/** An access_requests_view row as both backends read it: the request and what it names. */
export interface AccessRequestRow {
  uid: string;
  group_uid: string;
  role_uid: string;
  requester_uid: string;
  duration_ms: number;
  reason: string;
  state: string;
  expiration_time: number;
  reviewer_uid: string;
  review_reason: string;
  role_binding_uid: string;
  grant_expire_time: number | null;
  create_time: number;
  update_time: number;
  role_name: string;
  role_description: string;
  group_name: string;
  group_description: string;
  requester_name: string;
  requester_description: string;
  requester_subject: string;
  requester_issuer: string;
}

/**
 * An access request's storage: a child of its group, deleted with it, and with its role or
 * its requester (it could grant nothing). Read through access_requests_view, which adds what
 * it names.
 */
export const accessRequests = declareResource<AccessRequestRow, AccessRequestRecord>({
  kind: "access request",
  collection: "accessRequests",
  message: "gatehouse.iam.v2beta1.AccessRequest",
  table: "access_requests",
  view: "access_requests_view",
  columns: {
    uid: { field: "uid" },
    group_uid: { field: "group" },
    role_uid: { field: "role_uid" },
    requester_uid: { field: "requester" },
    duration_ms: { field: "duration" },
    reason: { field: "reason" },
    state: { field: "state", updated: true },
    expiration_time: { field: "expiration_time" },
    reviewer_uid: { field: "reviewer_uid", updated: true },
    review_reason: { field: "review_reason", updated: true },
    role_binding_uid: { field: "role_binding_uid", updated: true },
    grant_expire_time: {
      field: "grant_expire_time",
      updated: true,
      unsortable: "NULL until approved: a keyset cursor cannot resume across NULLs",
    },
    create_time: { field: "create_time" },
    update_time: { field: "update_time" },
    role_name: { field: "role", fromView: true },
    role_description: { field: "role", fromView: true },
    group_name: { field: "group", fromView: true },
    group_description: { field: "group", fromView: true },
    requester_name: { field: "requester", fromView: true },
    requester_description: { field: "requester", fromView: true },
    requester_subject: { field: "requester", fromView: true },
    requester_issuer: { field: "requester", fromView: true },
  },
  parent: { kind: "group", column: "group_uid", onDelete: "cascade" },
  list: { name: "role_name" },
  recordOf: accessRequestRecordOf,
});

/** The record of a stored access request. */
export function accessRequestRecordOf(row: AccessRequestRow): AccessRequestRecord {
  return {
    uid: row.uid,
    groupUid: row.group_uid,
    group: { uid: row.group_uid, name: row.group_name, description: row.group_description },
    roleUid: row.role_uid,
    role: { uid: row.role_uid, name: row.role_name, description: row.role_description },
    requesterUid: row.requester_uid,
    requester: {
      uid: row.requester_uid,
      name: row.requester_name,
      description: row.requester_description,
      subject: row.requester_subject,
      issuer: row.requester_issuer,
    },
    durationMs: Number(row.duration_ms),
    reason: row.reason,
    state: row.state as StoredRequestState,
    expirationTime: Number(row.expiration_time),
    reviewerUid: row.reviewer_uid,
    reviewReason: row.review_reason,
    roleBindingUid: row.role_binding_uid,
    ...(row.grant_expire_time === null ? {} : { grantExpireTime: Number(row.grant_expire_time) }),
    createTime: Number(row.create_time),
    updateTime: Number(row.update_time),
  };
}

/**
 * The list conditions of a state filter, the same SQL on both backends: a pending request past
 * its expiration time is expired, whether or not the sweep has marked it yet.
 */
export function accessRequestConditions(f: AccessRequestFilters): ListClause[] {
  if (!f.state) return [];
  const now = f.now ?? 0;
  switch (f.state) {
    case "pending":
      return [{ sql: "t.state = 'pending' AND t.expiration_time > ?", params: [now] }];
    case "expired":
      return [
        {
          sql: "(t.state = 'expired' OR (t.state = 'pending' AND t.expiration_time <= ?))",
          params: [now],
        },
      ];
    default:
      return [{ sql: "t.state = ?", params: [f.state] }];
  }
}
