import { create } from "@bufbuild/protobuf";
import { type FieldMask, timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  GroupMappingSchema,
  type IdentityProvider,
  IdentityProviderSchema,
  type IdentityProvidersService,
  ListIdentityProvidersResponseSchema,
  type Oidc,
  OidcSchema,
} from "../../../gen/gatehouse/iam/v2beta1/identity_providers_pb.js";
import type { Authorizer } from "../../auth/authorizer.js";
import { callbackUri, issuerShapeProblem } from "../../auth/login/issuer-url.js";
import { isPrivateAddress } from "../../auth/login/private-address.js";
import { isEmailDomain, maxEmailDomains } from "../../auth/oauth/email-domains.js";
import { isAllowedIssuerUrl } from "../../auth/oidc/fetch-json.js";
import { storeOf } from "../../call-store.js";
import type { Config } from "../../config.js";
import { failedPrecondition, invalidField, notFound } from "../../errors.js";
import { mayStillGrant, requireAll, requireGrantable } from "../../grants/grant-rule.js";
import { requireTeamPowers } from "../../grants/team-powers.js";
import type { ListEngine } from "../../list/list.js";
import { sortFieldsOf } from "../../list/sort-fields.js";
import type {
  GroupMappingRecord,
  IdentityProviderPatch,
  IdentityProviderRecord,
  OidcRecord,
} from "../../store/iam-store.js";
import { isEmptyPatch } from "../../store/patch.js";
import { identityProviders } from "../../store/rows/identity-provider-rows.js";
import type { Store } from "../../store/store.js";
import { isUid, newChildUid, rootOf } from "../../uid.js";
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
import { requireFound } from "../require-found.js";
import { sortValueOf } from "../sort-value.js";
import { updateRequest } from "../update-mask.js";

/** The fields a List of identityProviders may be ordered by: its message's scalars that a column keeps. */
const identityProvidersSorts = sortFieldsOf(IdentityProviderSchema, identityProviders.listColumns);

/** What the identity-providers service needs. */
export interface IdentityProvidersDeps {
  store: Store;
  lists: ListEngine;
  now: () => number;
  authorizer: Authorizer;
  config: Pick<
    Config,
    "authUrl" | "allowPrivateIssuerAddresses" | "maxIdentityProvidersPerOrganization"
  >;
}

/** An update of this resource: its uid checked, its mask resolved by field behaviour. */
const startUpdate = updateRequest(IdentityProviderSchema);

/** The proto names of Oidc's fields, which a mask may name one by one (`oidc.client_id`). */
const oidcFields = {
  issuer: "issuer",
  client_id: "clientId",
  client_secret: "clientSecret",
  additional_scopes: "additionalScopes",
  groups_claim: "groupsClaim",
} as const satisfies Record<string, keyof OidcRecord>;

const maxValueLength = 1024;
const maxScopes = 32;
const scopePattern = /^[\x21\x23-\x5b\x5d-\x7e]+$/; // RFC 6749 scope-token
const _unusableRole = "must be a built-in role or a role defined at or above the group";

/**
 * Create the IdentityProvidersService: the OIDC providers people of a group log in with. The
 * client secret is input only: it is stored, never answered, never logged. A provider grants
 * its default role to whoever logs in through it, so writing one is a grant: it needs
 * `role_bindings.create` and every capability of the role at the group.
 */
export function createIdentityProvidersService(
  deps: IdentityProvidersDeps,
): ServiceImpl<typeof IdentityProvidersService> {
  const { store, lists, now } = deps;
  const oidcRules = { allowPrivate: deps.config.allowPrivateIssuerAddresses };
  const maxPerOrg = deps.config.maxIdentityProvidersPerOrganization;
  const toIdentityProvider = (p: IdentityProviderRecord, grantable: boolean) =>
    identityProviderMessage(p, deps.config.authUrl, grantable);

  /**
   * Refuse a default role the caller could not grant at `group` (none: binding at all),
   * reading through `tx`, the transaction the provider's write commits in.
   */
  async function checkGrant(
    tx: Store,
    authorizer: Authorizer,
    ctx: HandlerContext,
    defaultRole: string,
    group: string,
  ) {
    if (defaultRole === "") {
      await requireAll(authorizer, callerOf(ctx), ["role_bindings.create"], group);
    } else {
      const grantDeps = { authorizer, store: tx };
      await requireGrantable(grantDeps, callerOf(ctx), defaultRole, group, "defaultRole");
    }
  }

  /**
   * Refuse a mapping to a team that is not of the provider's organization (INVALID_ARGUMENT, as
   * for a missing one), or one the caller may not add members to (PERMISSION_DENIED): a
   * mapping adds people to the team with the writer's authority, as AddTeamMembers would.
   */
  async function checkMappedTeams(
    tx: Store,
    authorizer: Authorizer,
    ctx: HandlerContext,
    mappings: readonly GroupMappingRecord[],
    group: string,
  ) {
    const seen = new Set<string>();
    for (const [i, m] of mappings.entries()) {
      if (seen.has(m.teamUid)) continue;
      seen.add(m.teamUid);
      const team = await tx.getTeam(m.teamUid);
      if (!team || rootOf(team.uid) !== rootOf(group)) {
        throw invalidField(
          `groupMappings[${i}].teamUid`,
          "must be a team of the provider's organization",
        );
      }
      await requireAll(authorizer, callerOf(ctx), ["teams.update"], team.uid);
      await requireTeamPowers(authorizer, tx, callerOf(ctx), team.uid);
    }
  }

  /** The API message of a provider, with whether its default role is grantable now. */
  async function present(p: IdentityProviderRecord): Promise<IdentityProvider> {
    const grantable =
      p.defaultRole !== "" && (await mayStillGrant(deps, p.writerUid, p.defaultRole, p.groupUid));
    return toIdentityProvider(p, grantable);
  }

  return {
    async listIdentityProviders(req, ctx) {
      const query = lists.parse(req, {}, { ...listOptionsOf(ctx), sort: identityProvidersSorts });
      const page = await store.listIdentityProviders(query);
      const { items, ...envelope } = lists.finish(query, page, sortValueOf);
      return create(ListIdentityProvidersResponseSchema, {
        identityProviders: await Promise.all(items.map(present)),
        ...envelope,
      });
    },

    async getIdentityProvider(req) {
      return present(
        await requireFound("identity provider", req.uid, (uid) => store.getIdentityProvider(uid)),
      );
    },

    async createIdentityProvider(req, ctx) {
      const store = storeOf(ctx);
      const body = req.identityProvider ?? create(IdentityProviderSchema);
      const v = violations();
      checkUid(v, "parent", req.parent);
      checkDisplayName(v, "name", body.name);
      checkDescription(v, "description", body.description);
      checkRoleUid(v, body.defaultRole);
      const oidc = toOidcRecord(body.oidc ?? create(OidcSchema));
      checkOidc(v, oidc, oidcRules);
      const emailDomains = checkEmailDomains(v, body.emailDomains);
      const groupMappings = checkGroupMappings(v, body.groupMappings);
      v.throwIfAny();
      const uid = newChildUid(req.parent);
      const provider = await atomically(store, async (tx, authorizer) => {
        if (!(await tx.getGroup(req.parent))) throw notFound("group", req.parent);
        await checkGrant(tx, authorizer, ctx, body.defaultRole, req.parent);
        await checkMappedTeams(tx, authorizer, ctx, groupMappings, req.parent);
        // Each provider is a discovery (and cached configuration) the server keeps for
        // strangers who name it: bounded per organization, checked in the same transaction.
        if ((await tx.countIdentityProviders(rootOf(req.parent))) >= maxPerOrg) {
          throw failedPrecondition(
            `the organization has ${maxPerOrg} identity providers, the most it may have: delete one first`,
          );
        }
        return tx.createIdentityProvider({
          uid,
          groupUid: req.parent,
          name: body.name,
          description: body.description,
          defaultRole: body.defaultRole,
          oidc,
          writerUid: callerOf(ctx).identityUid,
          emailDomains,
          groupMappings,
          now: now(),
        });
      });
      return present(provider);
    },

    async updateIdentityProvider(req, ctx) {
      const store = storeOf(ctx);
      const { body, fields, v } = startUpdate(req.identityProvider, req.updateMask);
      const current = await store.getIdentityProvider(body.uid);
      if (!current) throw notFound("identity provider", body.uid);
      const patch: IdentityProviderPatch = labelsPatch(v, fields, body, checkDisplayName);
      if (fields.has("default_role")) {
        checkRoleUid(v, body.defaultRole);
        patch.defaultRole = body.defaultRole;
      }
      if (fields.has("oidc")) {
        patch.oidc = mergeOidc(current.oidc, body.oidc ?? create(OidcSchema), req.updateMask);
        checkOidc(v, patch.oidc, oidcRules);
      }
      if (fields.has("email_domains")) {
        patch.emailDomains = checkEmailDomains(v, body.emailDomains);
      }
      if (fields.has("group_mappings")) {
        patch.groupMappings = checkGroupMappings(v, body.groupMappings);
      }
      v.throwIfAny();
      // The default role is granted with the authority of whoever last changed the provider.
      if (!isEmptyPatch(patch)) patch.writerUid = callerOf(ctx).identityUid;
      const updated = await atomically(store, async (tx, authorizer) => {
        // The role granted after this change, as stored when it commits.
        const role = patch.defaultRole ?? (await tx.getIdentityProvider(body.uid))?.defaultRole;
        if (role === undefined) throw notFound("identity provider", body.uid);
        await checkGrant(tx, authorizer, ctx, role, current.groupUid);
        // The mappings take the new writer's authority too: each is checked as it will stand.
        const mappings =
          patch.groupMappings ?? (await tx.getIdentityProvider(body.uid))?.groupMappings ?? [];
        await checkMappedTeams(tx, authorizer, ctx, mappings, current.groupUid);
        return tx.updateIdentityProvider(body.uid, patch, now());
      });
      return present(updated);
    },

    async deleteIdentityProvider(req, ctx) {
      const store = storeOf(ctx);
      const v = violations();
      checkUid(v, "uid", req.uid);
      v.throwIfAny();
      await store.deleteIdentityProvider(req.uid);
      return {};
    },
  };
}

/**
 * The OIDC settings after an update that changes `oidc`. Paths under `oidc` in the mask change
 * only the sub-fields they name; `oidc`, `*` or no mask replace the settings whole. The client
 * secret, which no reader ever sees, is kept unless the mask names `oidc.client_secret` or the
 * body carries a non-empty one (a client that writes back what it read must not wipe it), and
 * is cleared when the issuer or client ID changes without a new one.
 */
function mergeOidc(current: OidcRecord, body: Oidc, mask: FieldMask | undefined): OidcRecord {
  const given = toOidcRecord(body);
  const paths = mask?.paths ?? [];
  const whole = paths.length === 0 || paths.includes("*") || paths.includes("oidc");
  const named = new Set<keyof OidcRecord>();
  for (const path of paths) {
    if (!path.startsWith("oidc.")) continue;
    const sub = path.slice("oidc.".length);
    const key = oidcFields[sub as keyof typeof oidcFields];
    if (!key) throw invalidField("update_mask", `unknown field path ${JSON.stringify(path)}`);
    named.add(key);
  }
  const next: OidcRecord = whole ? { ...given } : { ...current };
  if (!whole) for (const key of named) Object.assign(next, { [key]: given[key] });
  const secretChanges = named.has("clientSecret") || (whole && given.clientSecret !== "");
  // The secret belongs to one client at one issuer: re-pointed elsewhere, it must not follow
  // (it would be sent to the new issuer). Kept only while both stay the same.
  const repointed = next.issuer !== current.issuer || next.clientId !== current.clientId;
  next.clientSecret = secretChanges ? given.clientSecret : repointed ? "" : current.clientSecret;
  return next;
}

function checkRoleUid(v: Violations, uid: string): void {
  if (uid !== "" && !isUid(uid)) v.add("defaultRole", "is not a valid uid");
}

/** Check OIDC settings; the secret is checked for length only and never echoed. */
function checkOidc(v: Violations, o: OidcRecord, rules: { allowPrivate: boolean }): void {
  const shape = o.issuer === "" ? undefined : issuerShapeProblem(o.issuer);
  if (o.issuer === "") v.add("oidc.issuer", "is required");
  else if (o.issuer.length > maxValueLength || !isAllowedIssuerUrl(o.issuer, true)) {
    v.add(
      "oidc.issuer",
      "must be an https URL (http only on a loopback host) without credentials, query or fragment",
    );
  } else if (shape) {
    v.add("oidc.issuer", `${shape}: Gatehouse reads {issuer}/.well-known/openid-configuration`);
  } else if (!rules.allowPrivate && isPrivateHost(new URL(o.issuer).hostname)) {
    v.add(
      "oidc.issuer",
      "must not be a private or loopback address (the server allows them only with GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES)",
    );
  }
  // PostgreSQL stores no NUL in text: refused here as the documented limits say, not a 500.
  for (const [field, value] of [
    ["oidc.clientId", o.clientId],
    ["oidc.clientSecret", o.clientSecret],
    ["oidc.groupsClaim", o.groupsClaim],
  ] as const) {
    if (value.includes("\0")) v.add(field, "must not contain NUL");
  }
  if (o.clientId === "") v.add("oidc.clientId", "is required");
  else if (o.clientId.length > maxValueLength) {
    v.add("oidc.clientId", `must be at most ${maxValueLength} characters`);
  }
  if (o.clientSecret.length > maxValueLength) {
    v.add("oidc.clientSecret", `must be at most ${maxValueLength} characters`);
  }
  if (o.additionalScopes.length > maxScopes) {
    v.add("oidc.additionalScopes", `must be at most ${maxScopes} scopes`);
  } else if (o.additionalScopes.some((s) => s.length > 256 || !scopePattern.test(s))) {
    v.add("oidc.additionalScopes", "each scope must be 1-256 printable characters without spaces");
  }
  if (o.groupsClaim.length > 256) v.add("oidc.groupsClaim", "must be at most 256 characters");
}

// A host named as a private address; names that resolve to one are refused when connecting.
function isPrivateHost(hostname: string): boolean {
  return hostname === "localhost" || hostname.endsWith(".localhost") || isPrivateAddress(hostname);
}

function toOidcRecord(o: Oidc): OidcRecord {
  return {
    issuer: o.issuer,
    clientId: o.clientId,
    clientSecret: o.clientSecret,
    additionalScopes: [...o.additionalScopes],
    groupsClaim: o.groupsClaim,
  };
}

/**
 * Map a stored provider to its API message: everything but the client secret, the redirect
 * URI to register at it (below `authUrl`), and `grantable`: whether its writer still may grant
 * its default role.
 */
export function identityProviderMessage(
  p: IdentityProviderRecord,
  authUrl: string,
  grantable: boolean,
): IdentityProvider {
  return create(IdentityProviderSchema, {
    redirectUri: callbackUri(authUrl, p.uid),
    uid: p.uid,
    name: p.name,
    description: p.description,
    defaultRole: p.defaultRole,
    oidc: create(OidcSchema, {
      issuer: p.oidc.issuer,
      clientId: p.oidc.clientId,
      additionalScopes: p.oidc.additionalScopes,
      groupsClaim: p.oidc.groupsClaim,
    }),
    writerUid: p.writerUid,
    defaultRoleGrantable: grantable,
    emailDomains: p.emailDomains,
    groupMappings: p.groupMappings.map((m) => create(GroupMappingSchema, m)),
    createTime: timestampFromMs(p.createTime),
    updateTime: timestampFromMs(p.updateTime),
  });
}

/** The most group mappings one provider has. */
const maxGroupMappings = 100;

// Group mappings as stored: each a claim value (1 to 256 characters, no NUL) and a team uid.
function checkGroupMappings(
  v: Violations,
  mappings: readonly { group: string; teamUid: string }[],
): GroupMappingRecord[] {
  if (mappings.length > maxGroupMappings) {
    v.add("groupMappings", `must be at most ${maxGroupMappings} mappings`);
    return [];
  }
  mappings.forEach((m, i) => {
    if (m.group === "" || m.group.length > 256 || m.group.includes("\0")) {
      v.add(`groupMappings[${i}].group`, "must be 1 to 256 characters, without NUL");
    }
    checkUid(v, `groupMappings[${i}].teamUid`, m.teamUid);
  });
  return mappings.map((m) => ({ group: m.group, teamUid: m.teamUid }));
}

// Email domains as stored: lowercase DNS names, each once, a bounded list.
function checkEmailDomains(v: Violations, domains: readonly string[]): string[] {
  const lower = domains.map((d) => d.toLowerCase());
  if (lower.length > maxEmailDomains) {
    v.add("emailDomains", `must be at most ${maxEmailDomains} domains`);
  } else if (lower.some((d) => !isEmailDomain(d))) {
    v.add("emailDomains", "each must be a DNS name such as example.com (letters, digits, hyphens)");
  } else if (new Set(lower).size !== lower.length) {
    v.add("emailDomains", "must not name a domain twice");
  }
  return lower;
}
