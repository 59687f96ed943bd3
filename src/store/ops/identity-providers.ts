import { parentOf } from "../../uid.js";
import type { IdentityProviderPatch, NewIdentityProvider } from "../iam-store.js";
import { isEmptyPatch } from "../patch.js";
import {
  type IdentityProviderRow,
  identityProviderListColumns,
  identityProviderRecordOf,
  oidcColumns,
} from "../rows/identity-provider-rows.js";
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
  updateRow,
  write,
} from "./operation.js";

const selectProvider = "SELECT * FROM identity_providers WHERE uid = ?";

const mustFind = (uid: string) =>
  found<IdentityProviderRow>("identity provider", selectProvider, uid);

// The lookup table follows the JSON column, in the same transaction.
function* setDomains(uid: string, domains: readonly string[]): Steps<void> {
  yield* run("DELETE FROM identity_provider_domains WHERE provider_uid = ?", uid);
  for (const d of new Set(domains)) {
    yield* run(
      "INSERT INTO identity_provider_domains (domain, provider_uid) VALUES (?, ?)",
      d,
      uid,
    );
  }
}

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
    const row = yield* one<IdentityProviderRow>(
      `INSERT INTO identity_providers (uid, group_uid, name, description, default_role, oidc,
         client_secret, writer_uid, email_domains, create_time, update_time)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
      p.uid,
      p.groupUid,
      p.name,
      p.description,
      p.defaultRole,
      o.oidc,
      o.clientSecret,
      p.writerUid,
      JSON.stringify(p.emailDomains ?? []),
      p.now,
      p.now,
    );
    yield* setDomains(p.uid, p.emailDomains ?? []);
    return identityProviderRecordOf(row!);
  }),

  getIdentityProvider: lookup(selectProvider, identityProviderRecordOf),

  updateIdentityProvider: write(function* (uid: string, patch: IdentityProviderPatch, now: number) {
    const current = identityProviderRecordOf(yield* mustFind(uid));
    if (isEmptyPatch(patch)) return current;
    const o = oidcColumns(patch.oidc ?? current.oidc);
    const row = yield* updateRow<IdentityProviderRow>(
      { reread: selectProvider, key: uid },
      `UPDATE identity_providers SET name = ?, description = ?, default_role = ?, oidc = ?,
         client_secret = ?, writer_uid = ?, email_domains = ?, update_time = ?
       WHERE uid = ?`,
      patch.name ?? current.name,
      patch.description ?? current.description,
      patch.defaultRole ?? current.defaultRole,
      o.oidc,
      o.clientSecret,
      patch.writerUid ?? current.writerUid,
      JSON.stringify(patch.emailDomains ?? current.emailDomains),
      now,
      uid,
    );
    if (patch.emailDomains) yield* setDomains(uid, patch.emailDomains);
    return identityProviderRecordOf(row!);
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

  findIdentityProvidersByDomain: read(function* (domain: string, limit: number) {
    return yield* rows<{ uid: string; name: string }>(
      `SELECT p.uid, p.name FROM identity_provider_domains AS d
         JOIN identity_providers AS p ON p.uid = d.provider_uid
       WHERE d.domain = ? ORDER BY p.create_time, p.uid LIMIT ?`,
      domain,
      limit,
    );
  }),

  listIdentityProviders: list(identityProviderListColumns, identityProviderRecordOf),
} satisfies OpsOf<
  | "createIdentityProvider"
  | "getIdentityProvider"
  | "updateIdentityProvider"
  | "deleteIdentityProvider"
  | "listIdentityProviders"
  | "countIdentityProviders"
  | "findIdentityProvidersByDomain"
>;
