import type { AccountLinks } from "../iam-store.js";
import { isEmptyPatch } from "../patch.js";
import {
  type AccountAssociationRow,
  accountAssociationListColumns,
  accountAssociationRecordOf,
  associationListQuery,
  linkColumns,
  providers,
} from "../rows/account-association-rows.js";
import { StoreError } from "../store.js";
import { createPgListSql } from "./list-sql.js";
import type { PgDb, PgOps, Sql } from "./pg-db.js";

/** The account-association operations of the PostgreSQL store. */
export type PgAccountAssociationOps = PgOps<
  | "createAccountAssociation"
  | "getAccountAssociation"
  | "updateAccountAssociation"
  | "deleteAccountAssociation"
  | "listAccountAssociations"
>;

/** Create the account-association operations on a migrated database. */
export function createPgAccountAssociationOps(db: PgDb): PgAccountAssociationOps {
  const find = (sql: Sql, uid: string) =>
    sql.one<AccountAssociationRow>("SELECT * FROM account_associations WHERE uid = $1", [uid]);
  const mustFind = async (sql: Sql, uid: string) => {
    const row = await find(sql, uid);
    if (!row) throw new StoreError("not_found", `account association ${JSON.stringify(uid)}`);
    return row;
  };
  const lists = createPgListSql<AccountAssociationRow>(db, accountAssociationListColumns);

  return {
    createAccountAssociation: (a) =>
      db.write(async (sql) => {
        if (!(await sql.one("SELECT 1 FROM groups WHERE uid = $1", [a.uid]))) {
          throw new StoreError("not_found", `group ${JSON.stringify(a.uid)}`);
        }
        if (await find(sql, a.uid)) {
          throw new StoreError("already_exists", "the group already has an account association");
        }
        const l = linkColumns(a);
        const row = await sql.one<AccountAssociationRow>(
          `INSERT INTO account_associations (uid, name, description, amazon, google, azure, github,
             create_time, update_time)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING *`,
          [a.uid, a.name, a.description, l.amazon, l.google, l.azure, l.github, a.now],
        );
        return accountAssociationRecordOf(row!);
      }),

    getAccountAssociation: async (uid) => {
      const row = await find(db.sql, uid);
      return row && accountAssociationRecordOf(row);
    },

    updateAccountAssociation: (uid, patch, now) =>
      db.write(async (sql) => {
        const current = accountAssociationRecordOf(await mustFind(sql, uid));
        if (isEmptyPatch(patch)) return current;
        const links: AccountLinks = {};
        for (const p of providers) {
          const next = patch[p] === undefined ? current[p] : patch[p];
          if (next) Object.assign(links, { [p]: next });
        }
        const l = linkColumns(links);
        const row = await sql.one<AccountAssociationRow>(
          `UPDATE account_associations SET name = $1, description = $2, amazon = $3, google = $4,
             azure = $5, github = $6, update_time = $7
           WHERE uid = $8 RETURNING *`,
          [
            patch.name ?? current.name,
            patch.description ?? current.description,
            l.amazon,
            l.google,
            l.azure,
            l.github,
            now,
            uid,
          ],
        );
        return accountAssociationRecordOf(row!);
      }),

    deleteAccountAssociation: (uid) =>
      db.write(async (sql) => {
        await mustFind(sql, uid);
        await sql.run("DELETE FROM account_associations WHERE uid = $1", [uid]);
      }),

    listAccountAssociations: async (query) => {
      const { query: rest, extra } = associationListQuery(query);
      const page = await lists.list(rest, extra);
      return {
        items: page.rows.map(accountAssociationRecordOf),
        total: page.total,
        hasMore: page.hasMore,
      };
    },
  };
}
