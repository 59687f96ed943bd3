import type { AccountAssociationRecord, AccountLinks } from "../iam-store.js";
import { isEmptyPatch } from "../patch.js";
import { StoreError } from "../store.js";
import { createPgListSql } from "./list-sql.js";
import type { PgDb, PgOps, Sql } from "./pg-db.js";

interface AccountAssociationRow {
  uid: string;
  name: string;
  description: string;
  amazon: string | null;
  google: string | null;
  azure: string | null;
  github: string | null;
  create_time: number;
  update_time: number;
}

const providers = ["amazon", "google", "azure", "github"] as const;

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
  // The association's uid is its group's: it is both the row's parent and its group for the
  // shared list SQL, so `childrenOf G` and scope find G's own association.
  const lists = createPgListSql<AccountAssociationRow>(db, {
    table: "account_associations",
    uid: "uid",
    parent: "uid",
    group: "uid",
    name: "name",
    sort: { name: "name", create_time: "create_time", update_time: "update_time", uid: "uid" },
  });

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
        return toRecord(row!);
      }),

    getAccountAssociation: async (uid) => {
      const row = await find(db.sql, uid);
      return row && toRecord(row);
    },

    updateAccountAssociation: (uid, patch, now) =>
      db.write(async (sql) => {
        const current = toRecord(await mustFind(sql, uid));
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
        return toRecord(row!);
      }),

    deleteAccountAssociation: (uid) =>
      db.write(async (sql) => {
        await mustFind(sql, uid);
        await sql.run("DELETE FROM account_associations WHERE uid = $1", [uid]);
      }),

    listAccountAssociations: async (query) => {
      // `descendantsOf G` means every resource whose group is G or below it; an association
      // shares its group's uid, so G's own is not in the strict uid range and is added here.
      const { descendantsOf, ...rest } = query;
      const extra =
        descendantsOf === undefined
          ? []
          : [
              {
                sql: "t.uid = ? OR (t.uid > ? AND t.uid < ?)",
                params: [descendantsOf, `${descendantsOf}/`, `${descendantsOf}0`],
              },
            ];
      const page = await lists.list(rest, extra);
      return { items: page.rows.map(toRecord), total: page.total, hasMore: page.hasMore };
    },
  };
}

function linkColumns(links: AccountLinks) {
  const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v));
  return {
    amazon: json(links.amazon),
    google: json(links.google),
    azure: json(links.azure),
    github: json(links.github),
  };
}

function toRecord(row: AccountAssociationRow): AccountAssociationRecord {
  const out: AccountAssociationRecord = {
    uid: row.uid,
    name: row.name,
    description: row.description,
    createTime: row.create_time,
    updateTime: row.update_time,
  };
  for (const p of providers) {
    const v = row[p];
    if (v !== null) Object.assign(out, { [p]: JSON.parse(v) as unknown });
  }
  return out;
}
