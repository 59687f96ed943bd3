import { create } from "@bufbuild/protobuf";
import { type FieldMask, timestampDate, timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { importJWK, type JWK } from "jose";
import {
  type ClaimMatch,
  ClaimMatchSchema,
  type IdentitiesService,
  type Identity,
  IdentitySchema,
  ListIdentitiesResponseSchema,
  type StaticKeys,
  StaticKeysSchema,
} from "../../../gen/gatehouse/iam/v2beta1/identities_pb.js";
import type { Authorizer } from "../../auth/authorizer.js";
import { validateClaimMatch } from "../../auth/claim-match.js";
import { OidcError } from "../../auth/oidc/oidc-error.js";
import { parsePublicJwks } from "../../auth/oidc/public-jwks.js";
import { storeOf } from "../../call-store.js";
import { notFound } from "../../errors.js";
import type { ListEngine } from "../../list/list.js";
import { sortFieldsOf } from "../../list/sort-fields.js";
import type {
  ClaimMatchRecord,
  IdentityPatch,
  IdentityRecord,
  StaticKeysRecord,
} from "../../store/iam-store.js";
import { identities } from "../../store/rows/identity-rows.js";
import type { Store } from "../../store/store.js";
import { newChildUid } from "../../uid.js";
import {
  checkDescription,
  checkDisplayName,
  checkUid,
  labelsPatch,
  type Violations,
  violations,
} from "../../validation/field-rules.js";
import { atomically } from "../atomic.js";
import { callerOf, listOptionsOf } from "../caller.js";
import { requireIdentityPowers } from "../escalation.js";
import { requireFound } from "../require-found.js";
import { sortValueOf } from "../sort-value.js";
import { overlayPaths, subPaths, updateRequest } from "../update-mask.js";

/** The fields a List of identities may be ordered by: its message's scalars that a column keeps. */
const identitiesSorts = sortFieldsOf(IdentitySchema, identities.listColumns);

/** What the identities service needs. */
export interface IdentitiesDeps {
  store: Store;
  lists: ListEngine;
  now: () => number;
  authorizer: Authorizer;
}

/** The longest and default lifetime of static keys, counted from the identity's creation. */
export const staticKeysMaxLifetimeMs = 365 * 24 * 3_600_000;
const maxValueLength = 1024;
const maxJwksLength = 64 * 1024;

/** An update of this resource: its uid checked, its mask resolved by field behaviour. */
const startUpdate = updateRequest(IdentitySchema);

/** Create the IdentitiesService: workloads and people that can hold role bindings. */
export function createIdentitiesService(
  deps: IdentitiesDeps,
): ServiceImpl<typeof IdentitiesService> {
  const { store, lists, now, authorizer } = deps;
  return {
    async listIdentities(req, ctx) {
      const query = lists.parse(req, {}, { ...listOptionsOf(ctx), sort: identitiesSorts });
      const page = await store.listIdentities(query);
      const { items, ...envelope } = lists.finish(query, page, sortValueOf);
      return create(ListIdentitiesResponseSchema, {
        identities: items.map(toIdentity),
        ...envelope,
      });
    },

    async getIdentity(req) {
      return toIdentity(await requireFound("identity", req.uid, (uid) => store.getIdentity(uid)));
    },

    async createIdentity(req, ctx) {
      const store = storeOf(ctx);
      const body = req.identity ?? create(IdentitySchema);
      const t = now();
      const v = violations();
      checkUid(v, "parent", req.parent);
      checkDisplayName(v, "name", body.name);
      checkDescription(v, "description", body.description);
      const method = await checkMethod(v, body.method, t, t);
      v.throwIfAny();
      if (!(await store.getGroup(req.parent))) throw notFound("group", req.parent);
      const identity = await store.createIdentity({
        uid: newChildUid(req.parent),
        groupUid: req.parent,
        name: body.name,
        description: body.description,
        ...method,
        now: t,
      });
      return toIdentity(identity);
    },

    async updateIdentity(req, ctx) {
      const store = storeOf(ctx);
      const { body, fields, v } = startUpdate(req.identity, req.updateMask);
      const current = await store.getIdentity(body.uid);
      if (!current) throw notFound("identity", body.uid);
      const patch: IdentityPatch = labelsPatch(v, fields, body, checkDisplayName);
      const methodNamed = fields.has("claim_match") || fields.has("static_keys");
      if (methodNamed) {
        // Whoever matches the new rule gets the identity's powers: the caller must hold them
        // (checked here to answer early, and again below where the change commits).
        await requireIdentityPowers(authorizer, store, callerOf(ctx), body.uid);
        const chosen = body.method.case;
        // The mask may name a method only if the body carries that one.
        if (
          chosen !== undefined &&
          !fields.has(chosen === "claimMatch" ? "claim_match" : "static_keys")
        ) {
          v.add(chosen, "is not named in update_mask");
        } else {
          const method = withCurrent(body.method, toIdentity(current).method, req.updateMask);
          Object.assign(patch, await checkMethod(v, method, current.createTime, now()));
        }
      }
      v.throwIfAny();
      const updated = await atomically(store, async (tx, authz) => {
        if (methodNamed) await requireIdentityPowers(authz, tx, callerOf(ctx), body.uid);
        return tx.updateIdentity(body.uid, patch, now());
      });
      return toIdentity(updated);
    },

    async deleteIdentity(req, ctx) {
      const store = storeOf(ctx);
      const v = violations();
      checkUid(v, "uid", req.uid);
      v.throwIfAny();
      // Deleting an identity drops its bindings, wherever they are: as with changing how it
      // authenticates, only a caller holding all of its powers may.
      await atomically(store, async (tx, authz) => {
        await requireIdentityPowers(authz, tx, callerOf(ctx), req.uid);
        await tx.deleteIdentity(req.uid);
      });
      return {};
    },
  };
}

type Method = Identity["method"];

/**
 * Check an identity's method (exactly one of claimMatch and staticKeys) and return it as
 * stored. Static keys expire at most 365 days after `createTime` (the default), never in the
 * past.
 */
async function checkMethod(
  v: Violations,
  method: Method,
  createTime: number,
  t: number,
): Promise<{ claimMatch?: ClaimMatchRecord; staticKeys?: StaticKeysRecord }> {
  switch (method.case) {
    case undefined:
      v.add("claimMatch", "exactly one of claimMatch and staticKeys is required");
      return {};
    case "claimMatch": {
      const cm = method.value;
      for (const problem of validateClaimMatch(cm)) v.add(problem.field, problem.description);
      return { claimMatch: claimMatchRecord(cm) };
    }
    case "staticKeys": {
      const sk = method.value;
      const field = (f: string) => `staticKeys.${f}`;
      for (const [name, value] of [
        ["issuer", sk.issuer],
        ["subject", sk.subject],
      ] as const) {
        if (value === "") v.add(field(name), "is required");
        else if (value.length > maxValueLength) {
          v.add(field(name), `must be at most ${maxValueLength} characters`);
        }
      }
      const keysProblem = await checkIssuerKeys(sk.issuerKeys);
      if (keysProblem) v.add(field("issuerKeys"), keysProblem);
      const latest = createTime + staticKeysMaxLifetimeMs;
      const expiration = sk.expirationTime ? timestampDate(sk.expirationTime).getTime() : latest;
      if (expiration > latest) {
        v.add(field("expirationTime"), "must be at most 365 days after the identity's creation");
      } else if (expiration <= t) v.add(field("expirationTime"), "must be in the future");
      return {
        staticKeys: {
          issuer: sk.issuer,
          subject: sk.subject,
          issuerKeys: sk.issuerKeys,
          expirationTime: expiration,
        },
      };
    }
  }
}

/**
 * The method an update gives, merged into the current one of the same kind where the update
 * names only some of its sub-fields (a mask path such as `claim_match.subject`, or, without a
 * mask, the sub-fields populated): those change, the others keep their values.
 */
function withCurrent(given: Method, current: Method, mask: FieldMask | undefined): Method {
  if (given.case === "claimMatch" && current.case === "claimMatch") {
    const sub = subPaths("claim_match", mask, ClaimMatchSchema, given.value);
    if (!sub) return given;
    const value = overlayPaths(ClaimMatchSchema, current.value, given.value, sub, "claim_match");
    return { case: "claimMatch", value };
  }
  if (given.case === "staticKeys" && current.case === "staticKeys") {
    const sub = subPaths("static_keys", mask, StaticKeysSchema, given.value);
    if (!sub) return given;
    const value = overlayPaths(StaticKeysSchema, current.value, given.value, sub, "static_keys");
    return { case: "staticKeys", value };
  }
  return given;
}

/** Why `json` is not a JWKS with at least one usable public signing key, or undefined. */
async function checkIssuerKeys(json: string): Promise<string | undefined> {
  if (json === "") return "is required";
  if (json.length > maxJwksLength) return `must be at most ${maxJwksLength} characters`;
  let keys: JWK[];
  try {
    keys = parsePublicJwks(json).keys;
  } catch (err) {
    if (err instanceof OidcError) return `is not a usable JWKS: ${err.message}`;
    throw err;
  }
  for (const key of keys) {
    try {
      await importJWK(key, key.alg ?? defaultAlg(key));
      return undefined;
    } catch {
      // Try the next key; one usable key is enough.
    }
  }
  return "holds no usable public key";
}

function defaultAlg(key: JWK): string {
  if (key.kty === "RSA") return "RS256";
  return key.crv === "P-384" ? "ES384" : key.crv === "P-521" ? "ES512" : "ES256";
}

function claimMatchRecord(cm: ClaimMatch): ClaimMatchRecord {
  return {
    issuer: cm.issuer,
    issuerPattern: cm.issuerPattern,
    subject: cm.subject,
    subjectPattern: cm.subjectPattern,
    audience: cm.audience,
    audiencePattern: cm.audiencePattern,
    claims: { ...cm.claims },
    claimPatterns: { ...cm.claimPatterns },
  };
}

/** Map a stored identity to its API message. */
export function toIdentity(i: IdentityRecord): Identity {
  let method: Method = { case: undefined };
  if (i.claimMatch) {
    method = { case: "claimMatch", value: create(ClaimMatchSchema, i.claimMatch) };
  } else if (i.staticKeys) {
    const sk: StaticKeys = create(StaticKeysSchema, {
      issuer: i.staticKeys.issuer,
      subject: i.staticKeys.subject,
      issuerKeys: i.staticKeys.issuerKeys,
      expirationTime: timestampFromMs(i.staticKeys.expirationTime),
    });
    method = { case: "staticKeys", value: sk };
  }
  return create(IdentitySchema, {
    uid: i.uid,
    name: i.name,
    description: i.description,
    email: i.email,
    lastSeenTime: timestampFromMs(i.lastSeenTime),
    method,
    createTime: timestampFromMs(i.createTime),
    updateTime: timestampFromMs(i.updateTime),
  });
}
