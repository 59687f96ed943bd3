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
import { mustExist } from "./must-exist.js";
import {
  exists,
  found,
  list,
  lookup,
  type OpsOf,
  one,
  run,
  updateRow,
  write,
} from "./operation.js";

const selectAssociation = "SELECT * FROM account_associations WHERE uid = ?";

const mustFind = (uid: string) =>
  found<AccountAssociationRow>("account association", selectAssociation, uid);

/** The account-association operations of both backends. */
export const accountAssociationOps = {
  createAccountAssociation: write(function* (a: NewAccountAssociation) {
    yield* mustExist("group", a.uid);
    if (yield* exists("SELECT 1 FROM account_associations WHERE uid = ?", a.uid)) {
      throw new StoreError("already_exists", "the group already has an account association");
    }
    const l = linkColumns(a);
    const row = yield* one<AccountAssociationRow>(
      `INSERT INTO account_associations (uid, name, description, amazon, google, azure, github,
         create_time, update_time)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
      a.uid,
      a.name,
      a.description,
      l.amazon,
      l.google,
      l.azure,
      l.github,
      a.now,
      a.now,
    );
    return accountAssociationRecordOf(row!);
  }),

  getAccountAssociation: lookup(selectAssociation, accountAssociationRecordOf),

  updateAccountAssociation: write(function* (
    uid: string,
    patch: AccountAssociationPatch,
    now: number,
  ) {
    const current = accountAssociationRecordOf(yield* mustFind(uid));
    if (isEmptyPatch(patch)) return current;
    const links: AccountLinks = {};
    for (const p of providers) {
      const next = patch[p] === undefined ? current[p] : patch[p];
      if (next) Object.assign(links, { [p]: next });
    }
    const l = linkColumns(links);
    const row = yield* updateRow<AccountAssociationRow>(
      { reread: selectAssociation, key: uid },
      `UPDATE account_associations SET name = ?, description = ?, amazon = ?, google = ?,
         azure = ?, github = ?, update_time = ?
       WHERE uid = ?`,
      patch.name ?? current.name,
      patch.description ?? current.description,
      l.amazon,
      l.google,
      l.azure,
      l.github,
      now,
      uid,
    );
    return accountAssociationRecordOf(row!);
  }),

  deleteAccountAssociation: write(function* (uid: string) {
    yield* mustFind(uid);
    yield* run("DELETE FROM account_associations WHERE uid = ?", uid);
  }),

  listAccountAssociations: list(
    accountAssociationListColumns,
    accountAssociationRecordOf,
    associationListQuery,
  ),
} satisfies OpsOf<
  | "createAccountAssociation"
  | "getAccountAssociation"
  | "updateAccountAssociation"
  | "deleteAccountAssociation"
  | "listAccountAssociations"
>;
