import { parentOf } from "../../uid.js";
import type {
  IdentityProviderPatch,
  NewIdentityProvider,
  SignInProviderMatch,
} from "../iam-store.js";
import { isEmptyPatch } from "../patch.js";
import {
  type IdentityProviderRow,
  identityProviderRecordOf,
  identityProviders,
  oidcColumns,
} from "../rows/identity-provider-rows.js";
import { insertRow, updateStored } from "../rows/resource.js";
import { StoreError } from "../store.js";
import { mustExist } from "./must-exist.js";
import {
  exists,
  found,
  list,
  lookup,
  type OpsOf,
  one,
  read,
  rows,
  run,
  type Steps,
  write,
} from "./operation.js";

const selectProvider = identityProviders.select;

const mustFind = (uid: string) =>
  found<IdentityProviderRow>("identity provider", selectProvider, uid);

// The lookup table follows the JSON column, in the same transaction. A domain kept keeps its
// row, and with it when it was claimed and whether DNS verified it; a new one is claimed now.
function* setDomains(uid: string, domains: readonly string[], now: number): Steps<void> {
  const wanted = new Set(domains);
  const held = yield* rows<{ domain: string }>(
    "SELECT domain FROM identity_provider_domains WHERE provider_uid = ?",
    uid,
  );
  for (const { domain } of held) {
    if (wanted.delete(domain)) continue;
    yield* run(
      "DELETE FROM identity_provider_domains WHERE provider_uid = ? AND domain = ?",
      uid,
      domain,
    );
  }
  for (const d of wanted) {
    yield* run(
      `INSERT INTO identity_provider_domains (domain, provider_uid, claim_time, check_time)
       VALUES (?, ?, ?, 0)`,
      d,
      uid,
      now,
    );
  }
}

// A match of the sign-in lookups: the provider, its organization's name, and the claim's
// order (verified first, then the oldest claim), at most `perOrg` per organization (the root
// segment of the uid, 40 characters). `claims` yields provider_uid, claim_time and verified.
const matchesOf = (claims: string) => `
  SELECT uid, name, organization, verified FROM (
    SELECT p.uid, p.name, g.name AS organization, c.verified, c.claim_time,
      ROW_NUMBER() OVER (PARTITION BY substr(p.uid, 1, 40)
        ORDER BY c.verified DESC, c.claim_time, p.uid) AS n
    FROM (${claims}) AS c
      JOIN identity_providers AS p ON p.uid = c.provider_uid
      JOIN groups AS g ON g.uid = substr(p.uid, 1, 40)
  ) AS m WHERE n <= ? ORDER BY verified DESC, claim_time, uid LIMIT ?`;

type MatchRow = { uid: string; name: string; organization: string; verified: number | string };
const matchOf = (r: MatchRow): SignInProviderMatch => ({
  uid: r.uid,
  name: r.name,
  organization: r.organization,
  verified: Number(r.verified) === 1,
});

/** The identity-provider operations of both backends. */
export const identityProviderOps = {
  createIdentityProvider: write(function* (p: NewIdentityProvider) {
    if (parentOf(p.uid) !== p.groupUid || p.groupUid === "") {
      throw new Error(`identity provider uid ${p.uid} is not a direct child of ${p.groupUid}`);
    }
    yield* mustExist("group", p.groupUid);
    if (yield* exists("SELECT 1 FROM identity_providers WHERE uid = ?", p.uid)) {
      throw new StoreError("already_exists", `identity provider ${JSON.stringify(p.uid)}`);
    }
    const o = oidcColumns(p.oidc);
    const row = yield* insertRow(identityProviders, {
      uid: p.uid,
      group_uid: p.groupUid,
      name: p.name,
      description: p.description,
      default_role: p.defaultRole,
      oidc: o.oidc,
      client_secret: o.clientSecret,
      writer_uid: p.writerUid,
      email_domains: JSON.stringify(p.emailDomains ?? []),
      group_mappings: JSON.stringify(p.groupMappings ?? []),
      create_time: p.now,
      update_time: p.now,
      name_time: p.now,
    });
    yield* setDomains(p.uid, p.emailDomains ?? [], p.now);
    return identityProviderRecordOf(row);
  }),

  getIdentityProvider: lookup(selectProvider, identityProviderRecordOf),

  updateIdentityProvider: write(function* (uid: string, patch: IdentityProviderPatch, now: number) {
    const stored = yield* mustFind(uid);
    const current = identityProviderRecordOf(stored);
    if (isEmptyPatch(patch)) return current;
    const o = oidcColumns(patch.oidc ?? current.oidc);
    const name = patch.name ?? current.name;
    const row = yield* updateStored(identityProviders, uid, {
      name,
      description: patch.description ?? current.description,
      default_role: patch.defaultRole ?? current.defaultRole,
      oidc: o.oidc,
      client_secret: o.clientSecret,
      writer_uid: patch.writerUid ?? current.writerUid,
      email_domains: JSON.stringify(patch.emailDomains ?? current.emailDomains),
      group_mappings: JSON.stringify(patch.groupMappings ?? current.groupMappings),
      // A new name is claimed now; the same name keeps its claim time.
      name_time: name === stored.name ? stored.name_time : now,
      update_time: now,
    });
    if (patch.emailDomains) yield* setDomains(uid, patch.emailDomains, now);
    return identityProviderRecordOf(row);
  }),

  deleteIdentityProvider: write(function* (uid: string) {
    yield* mustFind(uid);
    yield* run("DELETE FROM identity_provider_domains WHERE provider_uid = ?", uid);
    yield* run("DELETE FROM identity_providers WHERE uid = ?", uid);
  }),

  countIdentityProviders: read(function* (root: string) {
    // A provider's uid starts with its organization's root uid (hex, so no LIKE wildcard).
    const row = yield* one<{ n: number | string }>(
      "SELECT count(*) AS n FROM identity_providers WHERE uid LIKE ? || '/%'",
      root,
    );
    return Number(row?.n ?? 0);
  }),

  findIdentityProvidersByDomain: read(function* (domain: string, limit: number, perOrg: number) {
    const claims = `SELECT provider_uid, claim_time,
        CASE WHEN verify_time IS NULL THEN 0 ELSE 1 END AS verified
      FROM identity_provider_domains WHERE domain = ?`;
    return (yield* rows<MatchRow>(matchesOf(claims), domain, perOrg, limit)).map(matchOf);
  }),

  findIdentityProvidersByName: read(function* (name: string, limit: number, perOrg: number) {
    // A name is never verified: anyone may give a provider any name.
    const claims = `SELECT uid AS provider_uid, name_time AS claim_time, 0 AS verified
      FROM identity_providers WHERE name = ?`;
    return (yield* rows<MatchRow>(matchesOf(claims), name, perOrg, limit)).map(matchOf);
  }),

  domainClaimsToCheck: read(function* (checkedBefore: number, limit: number) {
    return (yield* rows<{ domain: string; provider_uid: string }>(
      `SELECT domain, provider_uid FROM identity_provider_domains
       WHERE verify_time IS NULL AND check_time <= ?
       ORDER BY check_time, claim_time, domain, provider_uid LIMIT ?`,
      checkedBefore,
      limit,
    )).map((r) => ({ domain: r.domain, providerUid: r.provider_uid }));
  }),

  recordDomainCheck: write(
    function* (domain: string, providerUid: string, now: number, verified: boolean) {
      // Only a claim still there and unverified: a claim dropped meanwhile stays dropped.
      yield* run(
        `UPDATE identity_provider_domains SET check_time = ?, verify_time = ?
         WHERE domain = ? AND provider_uid = ? AND verify_time IS NULL`,
        now,
        verified ? now : null,
        domain,
        providerUid,
      );
    },
    { accessNeutral: true, autocommit: true },
  ),

  listIdentityProviders: list(identityProviders.listColumns, identityProviderRecordOf),
} satisfies OpsOf<
  | "createIdentityProvider"
  | "getIdentityProvider"
  | "updateIdentityProvider"
  | "deleteIdentityProvider"
  | "listIdentityProviders"
  | "countIdentityProviders"
  | "findIdentityProvidersByDomain"
  | "findIdentityProvidersByName"
  | "domainClaimsToCheck"
  | "recordDomainCheck"
>;
