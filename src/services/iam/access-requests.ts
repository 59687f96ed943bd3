import { create } from "@bufbuild/protobuf";
import { type Duration, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  GroupRefSchema,
  IdentityRefSchema,
  RoleRefSchema,
} from "../../../gen/gatehouse/common/v2beta1/common_pb.js";
import {
  type AccessRequest,
  AccessRequest_State,
  AccessRequestSchema,
  type AccessRequestsService,
  ListAccessRequestsResponseSchema,
} from "../../../gen/gatehouse/iam/v2beta1/access_requests_pb.js";
import type { Authorizer } from "../../auth/authorizer.js";
import type { Principal } from "../../auth/principal.js";
import { failedPrecondition, invalidField, notFound, permissionDenied } from "../../errors.js";
import { maxBindingLifetimeMs } from "../../grants/binding-expiry.js";
import { requireGrantable } from "../../grants/grant-rule.js";
import type { ListEngine } from "../../list/list.js";
import { sortFieldsOf } from "../../list/sort-fields.js";
import { identityRefusal, refusalMessage } from "../../scim/scim-standing.js";
import type {
  AccessRequestFilters,
  AccessRequestRecord,
  StoredRequestState,
} from "../../store/access-request-store.js";
import { accessRequests } from "../../store/rows/access-request-rows.js";
import type { SortField, Store } from "../../store/store.js";
import { isAtOrBelow, newChildUid, parentOf, rootOf } from "../../uid.js";
import { checkUid, type Violations, violations } from "../../validation/field-rules.js";
import { atomically } from "../atomic.js";
import { callerOf, listOptionsOf } from "../caller.js";
import { sortValueOf } from "../sort-value.js";

/** What ListAccessRequests may be ordered by (order_by): from the message and its storage. */
const requestSorts = sortFieldsOf(AccessRequestSchema, accessRequests.listColumns);
/** What the access-requests service needs. */
export interface AccessRequestsDeps {
  store: Store;
  lists: ListEngine;
  now: () => number;
  authorizer: Authorizer;
}

/** How long a request waits for an answer before it lapses. */
export const accessRequestLifetimeMs = 7 * 24 * 60 * 60_000;
/** The longest reason a requester or a reviewer may give. */
export const maxReasonLength = 1000;

// Who may answer a request: whoever may grant role bindings at its group (and, to approve or
// deny it, its role there: requireGrantable).
const reviewCapability = "role_bindings.create";

const stateOfApi: Partial<Record<AccessRequest_State, StoredRequestState>> = {
  [AccessRequest_State.PENDING]: "pending",
  [AccessRequest_State.APPROVED]: "approved",
  [AccessRequest_State.DENIED]: "denied",
  [AccessRequest_State.EXPIRED]: "expired",
};

/**
 * Create the AccessRequestsService: a person (or workload) asks for a role at a group for a
 * while; those who may grant that role there approve it (an expiring role binding, made with
 * the approver's authority in the transaction that answers the request) or deny it. Nobody
 * answers their own request; an unanswered request lapses after accessRequestLifetimeMs.
 */
export function createAccessRequestsService(
  deps: AccessRequestsDeps,
): ServiceImpl<typeof AccessRequestsService> {
  const { store, lists, now, authorizer } = deps;

  /** Whether `caller` may answer requests at `group`. */
  async function mayReview(caller: Principal, group: string): Promise<boolean> {
    return (await authorizer.capabilitiesAt(caller, group)).has(reviewCapability);
  }

  /**
   * Answer `uid` with `decision`: the caller may grant its role at its group, is not its
   * requester, and the request is still pending; all decided in one transaction.
   */
  async function decide(
    caller: Principal,
    uid: string,
    reason: string,
    decision: "approved" | "denied",
  ): Promise<AccessRequest> {
    const v = violations();
    checkUid(v, "uid", uid);
    checkReason(v, reason, false);
    v.throwIfAny();
    const t = now();
    const outcome = await atomically(store, async (tx, authz) => {
      const request = await tx.getAccessRequest(uid);
      if (!request) throw notFound("access request", uid);
      if (request.requesterUid === caller.identityUid) {
        throw new ConnectError(
          "Permission denied: nobody approves or denies their own access request",
          Code.PermissionDenied,
        );
      }
      // A person the organization's directory deactivated or deleted is let back in by the
      // directory, never by a request (one filed before the deprovisioning may still be
      // pending): it can be denied, not approved.
      if (decision === "approved") {
        const refusal = await identityRefusal(
          tx,
          rootOf(request.groupUid),
          request.requesterUid,
          "",
        );
        if (refusal) {
          throw failedPrecondition(refusalMessage(refusal, "other"));
        }
      }
      // Approval is a grant, bounded by the approver's own authority as any grant is.
      await requireGrantable(
        { authorizer: authz, store: tx },
        caller,
        request.roleUid,
        request.groupUid,
      );
      return tx.decideAccessRequest({
        uid,
        decision,
        reviewerUid: caller.identityUid,
        reason,
        bindingUid: newChildUid,
        now: t,
      });
    });
    switch (outcome.kind) {
      case "not_found":
        throw notFound("access request", uid);
      case "not_pending":
        throw failedPrecondition(
          `the access request is ${stateName(outcome.request, t)}, no longer pending`,
        );
      default:
        return present(outcome.request, t);
    }
  }

  return {
    async listAccessRequests(req, ctx) {
      const filters: AccessRequestFilters = {};
      if (req.state !== AccessRequest_State.STATE_UNSPECIFIED) {
        const state = stateOfApi[req.state];
        if (!state) throw invalidField("state", "must be PENDING, APPROVED, DENIED or EXPIRED");
        filters.state = state;
        filters.now = now();
      }
      const query = lists.parse(req, filters, { ...listOptionsOf(ctx), sort: requestSorts });
      const page = await store.listAccessRequests(query);
      const { items, ...envelope } = lists.finish(query, page, requestSortValue);
      const t = now();
      return create(ListAccessRequestsResponseSchema, {
        accessRequests: items.map((r) => present(r, t)),
        ...envelope,
      });
    },

    async getAccessRequest(req, ctx) {
      const v = violations();
      checkUid(v, "uid", req.uid);
      v.throwIfAny();
      const caller = callerOf(ctx);
      const request = await store.getAccessRequest(req.uid);
      // Its requester sees it; others only where they may answer requests, and the same
      // refusal whether it exists or not.
      if (request?.requesterUid === caller.identityUid) return present(request, now());
      if (!(await mayReview(caller, parentOf(req.uid)))) throw permissionDenied(reviewCapability);
      if (!request) throw notFound("access request", req.uid);
      return present(request, now());
    },

    async createAccessRequest(req, ctx) {
      const body = req.accessRequest ?? create(AccessRequestSchema);
      const v = violations();
      checkUid(v, "parent", req.parent);
      checkUid(v, "roleUid", body.roleUid);
      const durationMs = checkDuration(v, body.duration);
      checkReason(v, body.reason, true);
      v.throwIfAny();
      const requester = callerOf(ctx);
      const t = now();
      const made = await atomically(store, async (tx) => {
        if (!(await tx.getGroup(req.parent))) throw notFound("group", req.parent);
        const role = await tx.getRole(body.roleUid);
        if (!role || !(role.builtin || isAtOrBelow(req.parent, role.groupUid))) {
          throw invalidField(
            "roleUid",
            "must be a built-in role or a role defined at or above the group",
          );
        }
        return tx.createAccessRequest({
          uid: newChildUid(req.parent),
          groupUid: req.parent,
          roleUid: body.roleUid,
          requesterUid: requester.identityUid,
          durationMs,
          reason: body.reason,
          expirationTime: t + accessRequestLifetimeMs,
          now: t,
        });
      });
      return present(made, t);
    },

    async approveAccessRequest(req, ctx) {
      return decide(callerOf(ctx), req.uid, req.reason, "approved");
    },

    async denyAccessRequest(req, ctx) {
      return decide(callerOf(ctx), req.uid, req.reason, "denied");
    },
  };
}

/** A request's state at `t`: a pending one past its expiration time has lapsed. */
function stateAt(r: AccessRequestRecord, t: number): AccessRequest_State {
  switch (r.state) {
    case "pending":
      return r.expirationTime <= t ? AccessRequest_State.EXPIRED : AccessRequest_State.PENDING;
    case "approved":
      return AccessRequest_State.APPROVED;
    case "denied":
      return AccessRequest_State.DENIED;
    case "expired":
      return AccessRequest_State.EXPIRED;
  }
}

function stateName(r: AccessRequestRecord, t: number): string {
  return AccessRequest_State[stateAt(r, t)]!.toLowerCase();
}

/** The duration in ms: required, more than 0, at most a binding's longest lifetime. */
function checkDuration(v: Violations, d: Duration | undefined): number {
  if (!d) {
    v.add("duration", "is required (how long the role is asked for)");
    return 0;
  }
  const ms = Number(d.seconds) * 1000 + Math.trunc(d.nanos / 1e6);
  if (!(ms > 0)) v.add("duration", "must be positive");
  else if (ms > maxBindingLifetimeMs) v.add("duration", "may be at most 366 days (31622400s)");
  return ms;
}

/** A reason: at most maxReasonLength characters; required of a requester. */
function checkReason(v: Violations, reason: string, required: boolean): void {
  if (required && reason.trim() === "") v.add("reason", "is required (say why)");
  else if ([...reason].length > maxReasonLength) {
    v.add("reason", `must be at most ${maxReasonLength} characters`);
  }
}

/** A request's value for a sort field; its name is its role's. */
function requestSortValue(r: AccessRequestRecord, field: SortField): string | number {
  return field === "name" ? r.role.name : sortValueOf(r, field);
}

/** Map a stored request to its API message, its state as at `t`. */
function present(r: AccessRequestRecord, t: number): AccessRequest {
  return create(AccessRequestSchema, {
    uid: r.uid,
    roleUid: r.roleUid,
    role: create(RoleRefSchema, r.role),
    group: create(GroupRefSchema, r.group),
    duration: {
      seconds: BigInt(Math.floor(r.durationMs / 1000)),
      nanos: (r.durationMs % 1000) * 1e6,
    },
    reason: r.reason,
    requester: create(IdentityRefSchema, r.requester),
    state: stateAt(r, t),
    expirationTime: timestampFromMs(r.expirationTime),
    reviewerUid: r.reviewerUid,
    reviewReason: r.reviewReason,
    roleBindingUid: r.roleBindingUid,
    ...(r.grantExpireTime === undefined
      ? {}
      : { grantExpireTime: timestampFromMs(r.grantExpireTime) }),
    createTime: timestampFromMs(r.createTime),
    updateTime: timestampFromMs(r.updateTime),
  });
}
