import { parentOf } from "../../uid.js";
import { isEmptyPatch } from "../patch.js";
import {
  type IdentityProviderRow,
  identityProviderListColumns,
  identityProviderRecordOf,
  oidcColumns,
} from "../rows/identity-provider-rows.js";
import { StoreError } from "../store.js";
import { createPgListSql } from "./list-sql.js";
import type { PgDb, PgOps, Sql } from "./pg-db.js";

/** The identity-provider operations of the PostgreSQL store. */
export type PgIdentityProviderOps = PgOps<
  | "createIdentityProvider"
  | "getIdentityProvider"
  | "updateIdentityProvider"
  | "deleteIdentityProvider"
  | "listIdentityProviders"
  | "countIdentityProviders"
  | "findIdentityProvidersByDomain"
>;

/** Create the identity-provider operations on a migrated database. */
export function createPgIdentityProviderOps(db: PgDb): PgIdentityProviderOps {
  const find = (sql: Sql, uid: string) =>
    sql.one<IdentityProviderRow>("SELECT * FROM identity_providers WHERE uid = $1", [uid]);
  const mustFind = async (sql: Sql, uid: string) => {
    const row = await find(sql, uid);
    if (!row) throw new StoreError("not_found", `identity provider ${JSON.stringify(uid)}`);
    return row;
  };
  const lists = createPgListSql<IdentityProviderRow>(db, identityProviderListColumns);
  // The lookup table follows the JSON column, in the same transaction.
  const setDomains = async (sql: Sql, uid: string, domains: readonly string[]) => {
    await sql.run("DELETE FROM identity_provider_domains WHERE provider_uid = $1", [uid]);
    for (const d of new Set(domains)) {
      await sql.run(
        "INSERT INTO identity_provider_domains (domain, provider_uid) VALUES ($1, $2)",
        [d, uid],
      );
    }
  };

  return {
    createIdentityProvider: (p) =>
      db.write(async (sql) => {
        if (parentOf(p.uid) !== p.groupUid || p.groupUid === "") {
          throw new Error(`identity provider uid ${p.uid} is not a direct child of ${p.groupUid}`);
        }
        if (!(await sql.one("SELECT 1 FROM groups WHERE uid = $1", [p.groupUid]))) {
          throw new StoreError("not_found", `group ${JSON.stringify(p.groupUid)}`);
        }
        if (await find(sql, p.uid)) {
          throw new StoreError("already_exists", `identity provider ${JSON.stringify(p.uid)}`);
        }
        const o = oidcColumns(p.oidc);
        const row = await sql.one<IdentityProviderRow>(
          `INSERT INTO identity_providers (uid, group_uid, name, description, default_role, oidc,
             client_secret, writer_uid, email_domains, create_time, update_time)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) RETURNING *`,
          [
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
          ],
        );
        await setDomains(sql, p.uid, p.emailDomains ?? []);
        return identityProviderRecordOf(row!);
      }),

    getIdentityProvider: async (uid) => {
      const row = await find(db.sql, uid);
      return row && identityProviderRecordOf(row);
    },

    updateIdentityProvider: (uid, patch, now) =>
      db.write(async (sql) => {
        const current = identityProviderRecordOf(await mustFind(sql, uid));
        if (isEmptyPatch(patch)) return current;
        const o = oidcColumns(patch.oidc ?? current.oidc);
        const row = await sql.one<IdentityProviderRow>(
          `UPDATE identity_providers SET name = $1, description = $2, default_role = $3,
             oidc = $4, client_secret = $5, update_time = $6, writer_uid = $8,
             email_domains = $9
           WHERE uid = $7 RETURNING *`,
          [
            patch.name ?? current.name,
            patch.description ?? current.description,
            patch.defaultRole ?? current.defaultRole,
            o.oidc,
            o.clientSecret,
            now,
            uid,
            patch.writerUid ?? current.writerUid,
            JSON.stringify(patch.emailDomains ?? current.emailDomains),
          ],
        );
        if (patch.emailDomains) await setDomains(sql, uid, patch.emailDomains);
        return identityProviderRecordOf(row!);
      }),

    deleteIdentityProvider: (uid) =>
      db.write(async (sql) => {
        await mustFind(sql, uid);
        await sql.run("DELETE FROM identity_provider_domains WHERE provider_uid = $1", [uid]);
        await sql.run("DELETE FROM identity_providers WHERE uid = $1", [uid]);
      }),

    countIdentityProviders: async (root) => {
      // A provider's uid starts with its organization's root uid (hex, so no LIKE wildcard).
      const row = await db.sql.one<{ n: string }>(
        "SELECT count(*) AS n FROM identity_providers WHERE uid LIKE $1 || '/%'",
        [root],
      );
      return Number(row?.n ?? 0);
    },

    findIdentityProvidersByDomain: (domain, limit) =>
      db.sql.rows<{ uid: string; name: string }>(
        `SELECT p.uid, p.name FROM identity_provider_domains AS d
           JOIN identity_providers AS p ON p.uid = d.provider_uid
         WHERE d.domain = $1 ORDER BY p.create_time, p.uid LIMIT $2`,
        [domain, limit],
      ),

    listIdentityProviders: async (query) => {
      const page = await lists.list(query);
      return {
        items: page.rows.map(identityProviderRecordOf),
        total: page.total,
        hasMore: page.hasMore,
      };
    },
  };
}
