import type { MessageInitShape } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  ClaimMatchSchema,
  type IdentitiesService,
  type Identity,
  IdentityListSchema,
  IdentitySchema,
  StaticKeysSchema,
} from "../../../gen/gatehouse/iam/v1/identities_pb.js";
import {
  IdentitiesService as V2IdentitiesService,
  type Identity as V2Identity,
  type IdentitySchema as V2IdentitySchema,
} from "../../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import { RoleBindingsService as V2RoleBindingsService } from "../../../gen/gatehouse/iam/v2beta1/role_bindings_pb.js";
import { ResourceInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { personUid } from "../../auth/login/person.js";
import { violations } from "../../validation/field-rules.js";
import { getOrNothing, listOrGet, uidpKeeps, v2Uidp } from "./v1-list.js";
import type { V1Deps, V2Calls } from "./v2-calls.js";

const v2 = V2IdentitiesService.method;

/**
 * How long v1's static keys last when a create gives no expiration: v1's default, 30 days
 * (v2beta1's is 365; both refuse more than 365).
 */
export const v1StaticKeysDefaultMs = 30 * 24 * 3_600_000;

/** Create the v1 IdentitiesService, an adapter over the v2 IdentitiesService. */
export function createV1IdentitiesService({
  v2: calls,
  now,
}: V1Deps & { now: () => number }): ServiceImpl<typeof IdentitiesService> {
  return {
    async create(req, ctx) {
      const identity = req.identity ?? create(IdentitySchema);
      const body = toV2Identity(identity);
      if (body.method?.case === "staticKeys" && !body.method.value.expirationTime) {
        body.method.value.expirationTime = timestampFromMs(now() + v1StaticKeysDefaultMs);
      }
      const made = await calls.call(
        v2.createIdentity,
        { parent: req.parentId, identity: body },
        ctx,
      );
      return toV1Identity(made);
    },

    async update(req, ctx) {
      // PUT replaces: every field v1 may write, given or not.
      const updated = await calls.call(
        v2.updateIdentity,
        {
          identity: { ...toV2Identity(req), uid: req.id },
          updateMask: { paths: ["name", "description", "claim_match", "static_keys"] },
        },
        ctx,
      );
      return toV1Identity(updated);
    },

    async list(req, ctx) {
      const keep = (i: V2Identity) => uidpKeeps(req.uidp, i.uid);
      const identities = await listOrGet({
        what: "identities",
        id: req.id,
        get: (uid) => calls.call(v2.getIdentity, { uid }, ctx),
        page: async (pageSize, pageToken) => {
          const page = await calls.call(
            v2.listIdentities,
            { uidp: v2Uidp(req.uidp), pageSize, pageToken },
            ctx,
          );
          return { items: page.identities, nextPageToken: page.nextPageToken };
        },
        keep,
      });
      return create(IdentityListSchema, { items: identities.map(toV1Identity) });
    },

    async delete(req, ctx) {
      await calls.call(v2.deleteIdentity, { uid: req.id }, ctx);
      return {};
    },

    async lookup(req, ctx) {
      const v = violations();
      if (req.issuer === "") v.add("issuer", "is required");
      if (req.subject === "") v.add("subject", "is required");
      v.throwIfAny();
      const found = await lookupIdentity(calls, req.issuer, req.subject, ctx);
      if (!found) {
        // The same answer whether the identity exists out of the caller's sight or not at all.
        throw new ConnectError(
          "Not found: no identity the caller may see signs in so",
          Code.NotFound,
          undefined,
          [{ desc: ResourceInfoSchema, value: { resourceType: "identity", resourceName: "" } }],
        );
      }
      return found;
    },
  };
}

/**
 * The identity that signs in with `issuer` and `subject`, in v1's shape, as far as the caller
 * may see it through v2: a person by their uid (GetIdentity, which shows a person only to
 * themselves), a workload identity the caller may list whose claim match or static keys name
 * exactly this issuer and subject (patterns are not resolved), or a person bound in a group
 * where the caller may list role bindings (the binding's identity summary). Never creates one:
 * people join through invites, and a lookup is a read.
 */
async function lookupIdentity(
  calls: V2Calls,
  issuer: string,
  subject: string,
  ctx: HandlerContext,
): Promise<Identity | undefined> {
  const person = personUid(issuer, subject);
  const self = await getOrNothing(() => calls.call(v2.getIdentity, { uid: person }, ctx));
  if (self[0]) return toV1Identity(self[0]);
  const matches = (m: V2Identity["method"]) =>
    (m.case === "claimMatch" || m.case === "staticKeys") &&
    m.value.issuer === issuer &&
    m.value.subject === subject;
  let pageToken = "";
  do {
    const page = await calls.call(
      v2.listIdentities,
      { pageSize: 200, pageToken, orderBy: "create_time" },
      ctx,
    );
    const hit = page.identities.find((i) => matches(i.method));
    if (hit) return toV1Identity(hit);
    pageToken = page.nextPageToken ?? "";
  } while (pageToken !== "");
  const bound = await calls.call(
    V2RoleBindingsService.method.listRoleBindings,
    { identity: person, pageSize: 1 },
    ctx,
  );
  const ref = bound.roleBindings[0]?.identity;
  return ref
    ? create(IdentitySchema, { id: ref.uid, name: ref.name, description: ref.description })
    : undefined;
}

/** The writable part of a v1 identity, as v2 takes it. */
function toV2Identity(i: Identity): MessageInitShape<typeof V2IdentitySchema> {
  const base = { name: i.name, description: i.description };
  switch (i.relationship.case) {
    case "claimMatch": {
      const { $typeName: _, ...fields } = i.relationship.value;
      return { ...base, method: { case: "claimMatch", value: fields } };
    }
    case "static": {
      const s = i.relationship.value;
      return {
        ...base,
        method: {
          case: "staticKeys",
          value: {
            issuer: s.issuer,
            subject: s.subject,
            issuerKeys: s.issuerKeys,
            ...(s.expiration ? { expirationTime: s.expiration } : {}),
          },
        },
      };
    }
    default:
      return base;
  }
}

/** A v2 identity in v1's shape. */
export function toV1Identity(i: V2Identity): Identity {
  const out = create(IdentitySchema, {
    id: i.uid,
    name: i.name,
    description: i.description,
    createdAt: i.createTime,
    updatedAt: i.updateTime,
    lastSeen: i.lastSeenTime,
  });
  if (i.method.case === "claimMatch") {
    const { $typeName: _, ...fields } = i.method.value;
    out.relationship = { case: "claimMatch", value: create(ClaimMatchSchema, fields) };
  } else if (i.method.case === "staticKeys") {
    const s = i.method.value;
    out.relationship = {
      case: "static",
      value: create(StaticKeysSchema, {
        issuer: s.issuer,
        subject: s.subject,
        issuerKeys: s.issuerKeys,
        expiration: s.expirationTime,
      }),
    };
  }
  return out;
}
