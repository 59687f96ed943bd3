import { createHash, randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { type Duration, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { RoleRefSchema } from "../../../gen/gatehouse/common/v2beta1/common_pb.js";
import {
  type GroupInvite,
  GroupInvite_State,
  GroupInviteSchema,
  type GroupInvitesService,
  ListGroupInvitesResponseSchema,
} from "../../../gen/gatehouse/iam/v2beta1/group_invites_pb.js";
import type { Authorizer } from "../../auth/authorizer.js";
import type { Config } from "../../config.js";
import { invalidField, notFound } from "../../errors.js";
import { setCallReason } from "../../events/call-scope.js";
import { mayStillGrant, requireGrantable } from "../../grants/grant-rule.js";
import type { ListEngine } from "../../list/list.js";
import { sortFieldsOf } from "../../list/sort-fields.js";
import { identityRefusal, refusalMessage } from "../../scim/scim-standing.js";
import type { GroupInvitePatch, GroupInviteRecord } from "../../store/invite-store.js";
import { groupInvites } from "../../store/rows/group-invite-rows.js";
import type { SortField, Store } from "../../store/store.js";
import { newChildUid, rootOf } from "../../uid.js";
import { checkUid, type Violations, violations } from "../../validation/field-rules.js";
import { atomically } from "../atomic.js";
import { callerOf, listOptionsOf } from "../caller.js";
import { requireFound } from "../require-found.js";
import { sortValueOf } from "../sort-value.js";
import { settleImmutable, updateRequest } from "../update-mask.js";
import { toRoleBinding } from "./role-bindings.js";

/** The fields a List of groupInvites may be ordered by: its message's scalars that a column keeps. */
const groupInvitesSorts = sortFieldsOf(GroupInviteSchema, groupInvites.listColumns);

/** What the group-invites service needs. */
export interface GroupInvitesDeps {
  store: Store;
  lists: ListEngine;
  now: () => number;
  authorizer: Authorizer;
  /** The base URL the console is served under (its invite links). */
  config: Pick<Config, "baseUrl">;
}

const day = 24 * 60 * 60 * 1000;
/** The lifetime of an invite without a ttl, and the longest one allowed (API.md). */
export const defaultInviteTtlMs = 7 * day;
export const maxInviteTtlMs = 30 * day;
const maxEmailLength = 254;
const emailPattern = /^[^\s@]+@[^\s@]+$/;

// role_uid is fixed at creation: an invite for another role is another invite.
/** An update of this resource: its uid checked, its mask resolved by field behaviour. */
const startUpdate = updateRequest(GroupInviteSchema);

// One answer for an unknown and an expired code; neither echoes the code.
const unknownCode = () =>
  new ConnectError("Not found: no invite has this code, or it has expired", Code.NotFound);

/**
 * Create the GroupInvitesService: codes that let whoever holds them join a group with a role.
 * Issuing or reviving an invite is a grant, so it needs what a role binding needs.
 */
export function createGroupInvitesService(
  deps: GroupInvitesDeps,
): ServiceImpl<typeof GroupInvitesService> {
  const { store, lists, now } = deps;

  /**
   * Whether the invite's creator still may grant its role at its group: an invite grants with
   * its creator's authority, so it lapses with it. Invites with no recorded creator never may.
   */
  async function creatorMayGrant(
    invite: GroupInviteRecord,
    on: { store: Store; authorizer: Authorizer } = deps,
  ): Promise<boolean> {
    return mayStillGrant(on, invite.creatorUid, invite.roleUid, invite.groupUid);
  }

  /** The API message of an invite, with its state at this moment. */
  async function present(invite: GroupInviteRecord, code?: string): Promise<GroupInvite> {
    const state =
      invite.expirationTime <= now()
        ? GroupInvite_State.EXPIRED
        : (await creatorMayGrant(invite))
          ? GroupInvite_State.ACTIVE
          : GroupInvite_State.CREATOR_LACKS_AUTHORITY;
    const link = code === undefined ? undefined : inviteLink(deps.config.baseUrl, code);
    return toGroupInvite(invite, state, code, link);
  }

  return {
    async listGroupInvites(req, ctx) {
      const query = lists.parse(req, {}, { ...listOptionsOf(ctx), sort: groupInvitesSorts });
      const page = await store.listGroupInvites(query);
      const result = lists.finish(query, page, inviteSortValue);
      return create(ListGroupInvitesResponseSchema, {
        groupInvites: await Promise.all(result.items.map((i) => present(i))),
        totalCount: result.totalCount,
        skipped: result.skipped,
        ...(result.nextPageToken ? { nextPageToken: result.nextPageToken } : {}),
      });
    },

    async getGroupInvite(req) {
      return present(
        await requireFound("group invite", req.uid, (uid) => store.getGroupInvite(uid)),
      );
    },

    async createGroupInvite(req, ctx) {
      const body = req.groupInvite ?? create(GroupInviteSchema);
      const v = violations();
      checkUid(v, "parent", req.parent);
      checkUid(v, "roleUid", body.roleUid);
      checkEmail(v, body.email);
      const ttlMs = checkTtl(v, body.ttl);
      v.throwIfAny();
      const creator = callerOf(ctx);
      const code = newInviteCode();
      const uid = newChildUid(req.parent);
      const t = now();
      const invite = await atomically(store, async (tx, authorizer) => {
        if (!(await tx.getGroup(req.parent))) throw notFound("group", req.parent);
        await requireGrantable({ authorizer, store: tx }, creator, body.roleUid, req.parent);
        return tx.createGroupInvite({
          uid,
          groupUid: req.parent,
          roleUid: body.roleUid,
          email: body.email,
          singleUse: body.singleUse,
          codeHash: hashCode(code),
          creatorUid: creator.identityUid,
          expirationTime: t + ttlMs,
          now: t,
        });
      });
      return present(invite, code);
    },

    async updateGroupInvite(req, ctx) {
      const { body, fields, v } = startUpdate(req.groupInvite, req.updateMask);
      const patch: GroupInvitePatch = {};
      if (fields.has("email")) {
        checkEmail(v, body.email);
        patch.email = body.email;
      }
      if (fields.has("single_use")) patch.singleUse = body.singleUse;
      const ttlMs = fields.has("ttl") ? checkTtl(v, body.ttl) : undefined;
      v.throwIfAny();
      const current = await store.getGroupInvite(body.uid);
      if (!current) throw notFound("group invite", body.uid);
      settleImmutable(fields, "role_uid", body.roleUid, current.roleUid, "roleUid");
      if (fields.size === 0) return present(current);
      const t = now();
      if (ttlMs !== undefined) patch.expirationTime = t + ttlMs;
      // Widening or reviving an invite grants its role anew.
      const updated = await atomically(store, async (tx, authorizer) => {
        const inTx = { authorizer, store: tx };
        await requireGrantable(inTx, callerOf(ctx), current.roleUid, current.groupUid);
        return tx.updateGroupInvite(body.uid, patch, t);
      });
      return present(updated);
    },

    async deleteGroupInvite(req) {
      const v = violations();
      checkUid(v, "uid", req.uid);
      v.throwIfAny();
      await store.deleteGroupInvite(req.uid);
      return {};
    },

    async redeemGroupInvite(req, ctx) {
      const principal = callerOf(ctx);
      // Redeeming adds to what the identity holds: a token narrowed below it may not.
      if (principal.narrowing) {
        throw new ConnectError(
          "Permission denied: a narrowed token may not redeem invites; use the identity's own token",
          Code.PermissionDenied,
        );
      }
      if (req.code === "") throw invalidField("code", "is required");
      const codeHash = hashCode(req.code);
      const t = now();
      // An invite's group never changes, so this read decides the organization rule; the
      // store's transaction decides everything that can change.
      const invite = await store.findGroupInviteByCode(codeHash);
      if (!invite || invite.expirationTime <= t) throw unknownCode();
      const person = !principal.identityUid.includes("/");
      if (!person && rootOf(principal.identityUid) !== rootOf(invite.groupUid)) {
        throw new ConnectError(
          "Permission denied: only a person or an identity of the group's organization may redeem this invite",
          Code.PermissionDenied,
        );
      }
      // The grant's event says an invite made it, and whose.
      setCallReason("invite", { inviteUid: invite.uid, creatorUid: invite.creatorUid });
      // The creator's authority and the redemption commit together: an invite never grants
      // what its creator lost a moment before.
      const outcome = await atomically(store, async (tx, authorizer) => {
        // A person the organization's directory deactivated or deleted comes back through it
        // (or by an owner's own grant), never through a standing code.
        const refusal = await identityRefusal(
          tx,
          rootOf(invite.groupUid),
          principal.identityUid,
          principal.email ?? "",
        );
        if (refusal) {
          throw new ConnectError(
            `Failed precondition: ${refusalMessage(refusal)}`,
            Code.FailedPrecondition,
          );
        }
        if (!(await creatorMayGrant(invite, { store: tx, authorizer }))) {
          throw new ConnectError(
            "Failed precondition: the invite's creator no longer may grant its role; ask for a new invite",
            Code.FailedPrecondition,
          );
        }
        return tx.redeemGroupInvite({
          codeHash,
          identityUid: principal.identityUid,
          email: principal.email ?? "",
          bindingUid: newChildUid,
          now: t,
        });
      });
      switch (outcome.kind) {
        case "not_found":
          throw unknownCode();
        case "email_mismatch":
          throw new ConnectError(
            "Permission denied: the invite is for a different verified email",
            Code.PermissionDenied,
          );
        case "redeemed":
          return toRoleBinding(outcome.binding);
      }
    },
  };
}

/**
 * A new invite code: 32 random bytes, base64url. One code in 64 would start with "-", which a
 * command line reads as an option (`gatehouse iam invites redeem -x...` is a usage error): such
 * a draw is made again, so every code can be pasted after the command as it is.
 */
export function newInviteCode(): string {
  for (;;) {
    const code = randomBytes(32).toString("base64url");
    if (!code.startsWith("-")) return code;
  }
}

/** The SHA-256 of a code, hex: all the store ever holds of it. */
export function hashCode(code: string): string {
  return createHash("sha256").update(code, "utf8").digest("hex");
}

/** Check an optional email: at most 254 characters, one `@` with something either side. */
function checkEmail(v: Violations, email: string): void {
  if (email === "") return;
  if (email.length > maxEmailLength) v.add("email", `must be at most ${maxEmailLength} characters`);
  else if (!emailPattern.test(email)) v.add("email", "must be an email address");
}

/** The ttl in ms: absent means 7 days; otherwise more than 0 and at most 30 days. */
function checkTtl(v: Violations, ttl: Duration | undefined): number {
  if (!ttl) return defaultInviteTtlMs;
  const ms = Number(ttl.seconds) * 1000 + Math.trunc(ttl.nanos / 1e6);
  if (ms <= 0) v.add("ttl", "must be positive");
  else if (ms > maxInviteTtlMs) v.add("ttl", "must be at most 30 days (2592000s)");
  return ms;
}

/** An invite's value for a sort field; its name is its role's. */
function inviteSortValue(i: GroupInviteRecord, field: SortField): string | number {
  return field === "name" ? i.role.name : sortValueOf(i, field);
}

/**
 * The console link of an invite code: the console at `baseUrl` signs the person in and
 * redeems it. The code is in the fragment, which no browser sends to a server or in a Referer,
 * so it reaches no request log; the console takes it out of the address at once.
 */
export function inviteLink(baseUrl: string, code: string): string {
  return `${baseUrl.replace(/\/$/, "")}/console/#/invite/${encodeURIComponent(code)}`;
}

/** Map a stored invite to its API message; `code` and `link` only on the answer to Create. */
function toGroupInvite(
  i: GroupInviteRecord,
  state: GroupInvite_State,
  code?: string,
  link?: string,
): GroupInvite {
  return create(GroupInviteSchema, {
    uid: i.uid,
    roleUid: i.roleUid,
    role: create(RoleRefSchema, i.role),
    email: i.email,
    expirationTime: timestampFromMs(i.expirationTime),
    singleUse: i.singleUse,
    creatorUid: i.creatorUid,
    state,
    ...(code === undefined ? {} : { code }),
    ...(link === undefined ? {} : { link }),
    createTime: timestampFromMs(i.createTime),
    updateTime: timestampFromMs(i.updateTime),
  });
}
