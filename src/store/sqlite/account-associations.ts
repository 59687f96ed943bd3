import type { Database } from "better-sqlite3";
import type { AccountAssociationPatch, AccountLinks, NewAccountAssociation } from "../iam-store.js";
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
import { createListSql } from "./list-sql.js";
import type { SyncOps } from "./sync-ops.js";

/** The account-association operations of the SQLite store. */
export type AccountAssociationOps = SyncOps<
  | "createAccountAssociation"
  | "getAccountAssociation"
  | "updateAccountAssociation"
  | "deleteAccountAssociation"
  | "listAccountAssociations"
>;

/** Create the account-association operations on an open, migrated database. */
export function createAccountAssociationOps(db: Database): AccountAssociationOps {
  const get = db.prepare("SELECT * FROM account_associations WHERE uid = ?");
  const groupExists = db.prepare("SELECT 1 FROM groups WHERE uid = ?");
  const insert = db.prepare(
    `INSERT INTO account_associations (uid, name, description, amazon, google, azure, github,
       create_time, update_time)
     VALUES (@uid, @name, @description, @amazon, @google, @azure, @github, @now, @now)`,
  );
  const update = db.prepare(
    `UPDATE account_associations SET name = @name, description = @description,
       amazon = @amazon, google = @google, azure = @azure, github = @github, update_time = @now
     WHERE uid = @uid`,
  );
  const remove = db.prepare("DELETE FROM account_associations WHERE uid = ?");
  const lists = createListSql<AccountAssociationRow>(db, accountAssociationListColumns);

  const find = (uid: string) => get.get(uid) as AccountAssociationRow | undefined;
  const mustFind = (uid: string) => {
    const row = find(uid);
    if (!row) throw new StoreError("not_found", `account association ${JSON.stringify(uid)}`);
    return row;
  };

  return {
    createAccountAssociation: db.transaction((a: NewAccountAssociation) => {
      if (!groupExists.get(a.uid)) {
        throw new StoreError("not_found", `group ${JSON.stringify(a.uid)}`);
      }
      if (find(a.uid)) {
        throw new StoreError("already_exists", "the group already has an account association");
      }
      insert.run({
        uid: a.uid,
        name: a.name,
        description: a.description,
        now: a.now,
        ...linkColumns(a),
      });
      return accountAssociationRecordOf(find(a.uid)!);
    }).immediate,

    getAccountAssociation: (uid) => {
      const row = find(uid);
      return row && accountAssociationRecordOf(row);
    },

    updateAccountAssociation: db.transaction(
      (uid: string, patch: AccountAssociationPatch, now: number) => {
        const current = accountAssociationRecordOf(mustFind(uid));
        if (isEmptyPatch(patch)) return current;
        const links: AccountLinks = {};
        for (const p of providers) {
          const next = patch[p] === undefined ? current[p] : patch[p];
          if (next) Object.assign(links, { [p]: next });
        }
        update.run({
          uid,
          name: patch.name ?? current.name,
          description: patch.description ?? current.description,
          now,
          ...linkColumns(links),
        });
        return accountAssociationRecordOf(find(uid)!);
      },
    ).immediate,

    deleteAccountAssociation: db.transaction((uid: string) => {
      mustFind(uid);
      remove.run(uid);
    }).immediate,

    listAccountAssociations: (query) => {
      const { query: rest, extra } = associationListQuery(query);
      const page = lists.list(rest, extra);
      return {
        items: page.rows.map(accountAssociationRecordOf),
        total: page.total,
        hasMore: page.hasMore,
      };
    },
  };
}
