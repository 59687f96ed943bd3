import { parentOf } from "../../uid.js";
import type {
  AccessRequestDecision,
  AccessRequestFilters,
  DecisionOutcome,
  NewAccessRequest,
  RequestExpiry,
} from "../access-request-store.js";
import {
  type AccessRequestRow,
  accessRequestConditions,
  accessRequestRecordOf,
  accessRequests,
} from "../rows/access-request-rows.js";
import { insertOnly } from "../rows/resource.js";
import { roleBindingRecordOf, roleBindings } from "../rows/role-binding-rows.js";
import { StoreError } from "../store.js";
import { mustExist } from "./must-exist.js";
import {
  column,
  exists,
  list,
  lookup,
  type OpsOf,
  one,
  read,
  run,
  type Steps,
  write,
} from "./operation.js";
import { findBinding } from "./role-bindings.js";

const selectRequest = accessRequests.select;

function* find(uid: string): Steps<AccessRequestRow | undefined> {
  return yield* one<AccessRequestRow>(selectRequest, uid);
}

function* record(uid: string) {
  return accessRequestRecordOf((yield* find(uid))!);
}

/** The access-request operations of both backends. */
export const accessRequestOps = {
  // A request grants nothing until approved: its creation leaves the access caches warm.
  createAccessRequest: write(
    function* (r: NewAccessRequest) {
      if (parentOf(r.uid) !== r.groupUid || r.groupUid === "") {
        throw new Error(`access request uid ${r.uid} is not a direct child of ${r.groupUid}`);
      }
      yield* mustExist("group", r.groupUid);
      yield* mustExist("role", r.roleUid);
      yield* mustExist("identity", r.requesterUid);
      if (yield* exists("SELECT 1 FROM access_requests WHERE uid = ?", r.uid)) {
        throw new StoreError("already_exists", `access request ${JSON.stringify(r.uid)}`);
      }
      yield* insertOnly(accessRequests, {
        uid: r.uid,
        group_uid: r.groupUid,
        role_uid: r.roleUid,
        requester_uid: r.requesterUid,
        duration_ms: r.durationMs,
        reason: r.reason,
        state: "pending",
        expiration_time: r.expirationTime,
        reviewer_uid: "",
        review_reason: "",
        role_binding_uid: "",
        grant_expire_time: null,
        create_time: r.now,
        update_time: r.now,
      });
      return yield* record(r.uid);
    },
    { accessNeutral: true },
  ),

  getAccessRequest: lookup(selectRequest, accessRequestRecordOf),

  listAccessRequests: list(accessRequests.listColumns, accessRequestRecordOf, (query) => ({
    query,
    extra: accessRequestConditions((query.filters ?? {}) as AccessRequestFilters),
  })),

  // One write transaction: the request's state is read and changed with the binding's write,
  // so of two reviewers answering at once one finds it answered (PostgreSQL's serializable
  // retry re-reads it).
  decideAccessRequest: write(function* (d: AccessRequestDecision): Steps<DecisionOutcome> {
    const row = yield* find(d.uid);
    if (!row) return { kind: "not_found" };
    if (row.state !== "pending" || Number(row.expiration_time) <= d.now) {
      return { kind: "not_pending", request: accessRequestRecordOf(row) };
    }
    if (d.decision === "denied") {
      yield* run(
        `UPDATE access_requests SET state = 'denied', reviewer_uid = ?, review_reason = ?,
         update_time = ? WHERE uid = ?`,
        d.reviewerUid,
        d.reason,
        d.now,
        d.uid,
      );
      return { kind: "denied", request: yield* record(d.uid) };
    }
    const until = d.now + Number(row.duration_ms);
    const held = yield* one<{ uid: string; expire_time: number | null }>(
      `SELECT uid, expire_time FROM role_bindings
       WHERE identity_uid = ? AND group_uid = ? AND role_uid = ?`,
      row.requester_uid,
      row.group_uid,
      row.role_uid,
    );
    let bindingUid: string;
    let grantExpire: number | null = until;
    if (held) {
      bindingUid = held.uid;
      if (held.expire_time === null) {
        // Held until revoked already: an approval takes nothing away.
        grantExpire = null;
      } else if (Number(held.expire_time) < until) {
        yield* run(
          "UPDATE role_bindings SET expire_time = ?, update_time = ? WHERE uid = ?",
          until,
          d.now,
          held.uid,
        );
      } else {
        grantExpire = Number(held.expire_time);
      }
    } else {
      bindingUid = d.bindingUid(row.group_uid);
      if (parentOf(bindingUid) !== row.group_uid) {
        throw new Error(`role binding uid ${bindingUid} is not a direct child of ${row.group_uid}`);
      }
      yield* insertOnly(roleBindings, {
        uid: bindingUid,
        group_uid: row.group_uid,
        identity_uid: row.requester_uid,
        team_uid: null,
        role_uid: row.role_uid,
        create_time: d.now,
        update_time: d.now,
        expire_time: until,
      });
    }
    yield* run(
      `UPDATE access_requests SET state = 'approved', reviewer_uid = ?, review_reason = ?,
       role_binding_uid = ?, grant_expire_time = ?, update_time = ? WHERE uid = ?`,
      d.reviewerUid,
      d.reason,
      bindingUid,
      grantExpire,
      d.now,
      d.uid,
    );
    return {
      kind: "approved",
      request: yield* record(d.uid),
      binding: roleBindingRecordOf((yield* findBinding(bindingUid))!),
    };
  }),

  lapsedAccessRequests: read(function* (now: number, limit: number) {
    return Object.freeze(
      yield* column<string>(
        `SELECT uid FROM access_requests WHERE state = 'pending' AND expiration_time <= ?
         ORDER BY expiration_time, uid LIMIT ?`,
        now,
        limit,
      ),
    ) as readonly string[];
  }),

  expireAccessRequest: write(
    function* (uid: string, now: number): Steps<RequestExpiry> {
      // The update decides: of two replicas sweeping at once, one marks it and reports it.
      const marked = yield* column<string>(
        `UPDATE access_requests SET state = 'expired', update_time = ?
         WHERE uid = ? AND state = 'pending' AND expiration_time <= ? RETURNING uid`,
        now,
        uid,
        now,
      );
      if (marked.length === 0) return { kind: "absent" };
      return { kind: "expired", request: yield* record(uid) };
    },
    { accessNeutral: true },
  ),
} satisfies OpsOf<
  | "createAccessRequest"
  | "getAccessRequest"
  | "listAccessRequests"
  | "decideAccessRequest"
  | "lapsedAccessRequests"
  | "expireAccessRequest"
>;
