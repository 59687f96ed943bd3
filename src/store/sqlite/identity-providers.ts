import type { Database } from "better-sqlite3";
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
import { createListSql } from "./list-sql.js";
import type { SyncOps } from "./sync-ops.js";

/** The identity-provider operations of the SQLite store. */
export type IdentityProviderOps = SyncOps<
  | "createIdentityProvider"
  | "getIdentityProvider"
  | "updateIdentityProvider"
  | "deleteIdentityProvider"
  | "listIdentityProviders"
  | "countIdentityProviders"
  | "findIdentityProvidersByDomain"
>;

/** Create the identity-provider operations on an open, migrated database. */
export function createIdentityProviderOps(db: Database): IdentityProviderOps {
  const get = db.prepare("SELECT * FROM identity_providers WHERE uid = ?");
  const groupExists = db.prepare("SELECT 1 FROM groups WHERE uid = ?");
  const insert = db.prepare(
    `INSERT INTO identity_providers (uid, group_uid, name, description, default_role, oidc,
       client_secret, writer_uid, email_domains, create_time, update_time)
     VALUES (@uid, @group, @name, @description, @defaultRole, @oidc, @clientSecret, @writer,
       @emailDomains, @now, @now)`,
  );
  const clearDomains = db.prepare("DELETE FROM identity_provider_domains WHERE provider_uid = ?");
  const addDomain = db.prepare(
    "INSERT INTO identity_provider_domains (domain, provider_uid) VALUES (?, ?)",
  );
  const byDomain = db.prepare(
    `SELECT p.uid, p.name FROM identity_provider_domains AS d
       JOIN identity_providers AS p ON p.uid = d.provider_uid
     WHERE d.domain = ? ORDER BY p.create_time, p.uid LIMIT ?`,
  );
  // The lookup table follows the JSON column, in the same transaction.
  const setDomains = (uid: string, domains: readonly string[]) => {
    clearDomains.run(uid);
    for (const d of new Set(domains)) addDomain.run(d, uid);
  };
  const update = db.prepare(
    `UPDATE identity_providers SET name = @name, description = @description,
       default_role = @defaultRole, oidc = @oidc, client_secret = @clientSecret,
       writer_uid = @writer, email_domains = @emailDomains, update_time = @now
     WHERE uid = @uid`,
  );
  const remove = db.prepare("DELETE FROM identity_providers WHERE uid = ?");
  // A provider's uid starts with its organization's root uid (hex, so no LIKE wildcard).
  const count = db.prepare("SELECT count(*) AS n FROM identity_providers WHERE uid LIKE ? || '/%'");
  const lists = createListSql<IdentityProviderRow>(db, identityProviderListColumns);

  const find = (uid: string) => get.get(uid) as IdentityProviderRow | undefined;
  const mustFind = (uid: string) => {
    const row = find(uid);
    if (!row) throw new StoreError("not_found", `identity provider ${JSON.stringify(uid)}`);
    return row;
  };

  return {
    createIdentityProvider: db.transaction((p: NewIdentityProvider) => {
      if (parentOf(p.uid) !== p.groupUid || p.groupUid === "") {
        throw new Error(`identity provider uid ${p.uid} is not a direct child of ${p.groupUid}`);
      }
      if (!groupExists.get(p.groupUid)) {
        throw new StoreError("not_found", `group ${JSON.stringify(p.groupUid)}`);
      }
      if (find(p.uid)) {
        throw new StoreError("already_exists", `identity provider ${JSON.stringify(p.uid)}`);
      }
      insert.run({
        uid: p.uid,
        group: p.groupUid,
        name: p.name,
        description: p.description,
        defaultRole: p.defaultRole,
        writer: p.writerUid,
        emailDomains: JSON.stringify(p.emailDomains ?? []),
        now: p.now,
        ...oidcColumns(p.oidc),
      });
      setDomains(p.uid, p.emailDomains ?? []);
      return identityProviderRecordOf(find(p.uid)!);
    }).immediate,

    getIdentityProvider: (uid) => {
      const row = find(uid);
      return row && identityProviderRecordOf(row);
    },

    updateIdentityProvider: db.transaction(
      (uid: string, patch: IdentityProviderPatch, now: number) => {
        const current = identityProviderRecordOf(mustFind(uid));
        if (isEmptyPatch(patch)) return current;
        update.run({
          uid,
          name: patch.name ?? current.name,
          description: patch.description ?? current.description,
          defaultRole: patch.defaultRole ?? current.defaultRole,
          writer: patch.writerUid ?? current.writerUid,
          emailDomains: JSON.stringify(patch.emailDomains ?? current.emailDomains),
          now,
          ...oidcColumns(patch.oidc ?? current.oidc),
        });
        if (patch.emailDomains) setDomains(uid, patch.emailDomains);
        return identityProviderRecordOf(find(uid)!);
      },
    ).immediate,

    deleteIdentityProvider: db.transaction((uid: string) => {
      mustFind(uid);
      clearDomains.run(uid);
      remove.run(uid);
    }).immediate,

    countIdentityProviders: (root) => (count.get(root) as { n: number }).n,

    findIdentityProvidersByDomain: (domain, limit) =>
      byDomain.all(domain, limit) as { uid: string; name: string }[],

    listIdentityProviders: (query) => {
      const page = lists.list(query);
      return {
        items: page.rows.map(identityProviderRecordOf),
        total: page.total,
        hasMore: page.hasMore,
      };
    },
  };
}
