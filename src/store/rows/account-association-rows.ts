import type { AccountAssociationRecord, AccountLinks } from "../iam-store.js";
import type { ListClause } from "../list-clauses.js";
import type { ListQuery } from "../store.js";
import { declareResource } from "./resource.js";

/** An account_associations row as both backends store it (each link as JSON, or null). */
export interface AccountAssociationRow {
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

/** The account links a record may carry, each in a column of its own. */
export const providers = ["amazon", "google", "azure", "github"] as const;

/** The stored columns of an association's links. */
export function linkColumns(links: AccountLinks) {
  const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v));
  return {
    amazon: json(links.amazon),
    google: json(links.google),
    azure: json(links.azure),
    github: json(links.github),
  };
}

/**
 * An account association's storage: its uid is its group's (the primary key is the
 * one-per-group rule), and it goes with its group.
 */
export const accountAssociations = declareResource<AccountAssociationRow, AccountAssociationRecord>(
  {
    kind: "account association",
    collection: "accountAssociations",
    message: "gatehouse.iam.v2beta1.AccountAssociation",
    table: "account_associations",
    columns: {
      uid: { field: "uid" },
      name: { field: "name", updated: true },
      description: { field: "description", updated: true },
      amazon: { field: "amazon", updated: true },
      google: { field: "google", updated: true },
      azure: { field: "azure", updated: true },
      github: { field: "github", updated: true },
      create_time: { field: "create_time" },
      update_time: { field: "update_time" },
    },
    // The association's uid is its group's: it is both the row's parent and its group for the
    // shared list SQL, so `childrenOf G` and scope find G's own association.
    parent: { kind: "group", column: "uid", onDelete: "cascade" },
    recordOf: accountAssociationRecordOf,
  },
);

/** The record of a stored account association. */
export function accountAssociationRecordOf(row: AccountAssociationRow): AccountAssociationRecord {
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

/** Where the list SQL of either backend finds the columns of account associations. */
export const accountAssociationListColumns = accountAssociations.listColumns;

/**
 * A list query of associations as the list SQL runs it. `descendantsOf G` means every resource
 * whose group is G or below it; an association shares its group's uid, so G's own is not in
 * the strict uid range: the query's `descendantsOf` becomes a condition that adds it.
 */
export function associationListQuery<Q extends ListQuery<unknown>>(
  query: Q,
): { query: Omit<Q, "descendantsOf">; extra: ListClause[] } {
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
  return { query: rest, extra };
}
