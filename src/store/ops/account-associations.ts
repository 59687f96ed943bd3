import type { AccountAssociationPatch, AccountLinks, NewAccountAssociation } from "../iam-store.js";
import { isEmptyPatch } from "../patch.js";
import {
  type AccountAssociationRow,
  accountAssociationRecordOf,
  accountAssociations,
  associationListQuery,
  linkColumns,
  providers,
} from "../rows/account-association-rows.js";
import { insertRow, updateStored } from "../rows/resource.js";
import { StoreError } from "../store.js";
import { mustExist } from "./must-exist.js";
import { exists, found, list, lookup, type OpsOf, run, write } from "./operation.js";

const selectAssociation = accountAssociations.select;

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
    const row = yield* insertRow(accountAssociations, {
      uid: a.uid,
      name: a.name,
      description: a.description,
      ...l,
      create_time: a.now,
      update_time: a.now,
    });
    return accountAssociationRecordOf(row);
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
    const row = yield* updateStored(accountAssociations, uid, {
      name: patch.name ?? current.name,
      description: patch.description ?? current.description,
      ...l,
      update_time: now,
    });
    return accountAssociationRecordOf(row);
  }),

  deleteAccountAssociation: write(function* (uid: string) {
    yield* mustFind(uid);
    yield* run("DELETE FROM account_associations WHERE uid = ?", uid);
  }),

  listAccountAssociations: list(
    accountAssociations.listColumns,
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
