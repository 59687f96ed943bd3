/**
 * Every stored resource's declaration (rows/resource.ts), and the rules that derive from their
 * parents: what blocks a parent's delete and what goes with it.
 */
import { exists, run, type Steps, type Text } from "../ops/operation.js";
import { StoreError } from "../store.js";
import { accessRequests } from "./access-request-rows.js";
import { accountAssociations } from "./account-association-rows.js";
import { advisories } from "./advisory-rows.js";
import { groupInvites } from "./group-invite-rows.js";
import { groups } from "./group-rows.js";
import { identityProviders } from "./identity-provider-rows.js";
import { identities } from "./identity-rows.js";
import { repos } from "./repo-rows.js";
import type { ParentKind, Resource } from "./resource.js";
import { roleBindings } from "./role-binding-rows.js";
import { roles } from "./role-rows.js";
import { subscriptions } from "./subscription-rows.js";
import { tags } from "./tag-rows.js";
import { teams } from "./team-rows.js";

/**
 * The declarations, in the order a parent's delete checks its children: the first kind found
 * is the one a not_empty error reports, on both backends.
 */
export const resources: readonly Resource<never, unknown>[] = [
  repos,
  groups,
  identities,
  roles,
  identityProviders,
  teams,
  tags,
  roleBindings,
  accountAssociations,
  groupInvites,
  accessRequests,
  advisories,
  subscriptions,
] as Resource<never, unknown>[];

const childrenOf = (kind: ParentKind, onDelete: "block" | "cascade") =>
  resources.filter((r) => r.parent?.kind === kind && r.parent.onDelete === onDelete);

/**
 * What keeps a `kind` from being deleted: a query per kind of child, true (a row) if the
 * parent (`?`, its uid) has one, in the declarations' order.
 */
export function childChecks(kind: ParentKind): readonly { collection: string; sql: Text }[] {
  return childrenOf(kind, "block").map((r) => ({
    collection: r.collection,
    sql: r.parent!.find ?? `SELECT 1 FROM ${r.table} WHERE ${r.parent!.column} = ? LIMIT 1`,
  }));
}

/** What goes with a deleted `kind`: a DELETE per kind of child, of the parent's (`?`). */
export function cascades(kind: ParentKind): readonly string[] {
  return childrenOf(kind, "cascade").map(
    (r) => `DELETE FROM ${r.table} WHERE ${r.parent!.column} = ?`,
  );
}

const checks = { group: childChecks("group"), repo: childChecks("repo") };
const deletes = { group: cascades("group"), repo: cascades("repo") };

/**
 * Refuse the delete of the `kind` `uid` while a child that blocks it exists: not_empty,
 * naming the first such kind found.
 */
export function* mustHaveNoChildren(kind: ParentKind, uid: string): Steps<void> {
  for (const { collection, sql } of checks[kind]) {
    if (yield* exists(sql, uid)) {
      throw new StoreError(
        "not_empty",
        `${kind} ${JSON.stringify(uid)} has child ${collection}`,
        collection,
        kind,
      );
    }
  }
}

/** Delete what goes with the `kind` `uid` (its children declared `cascade`). */
export function* deleteCascades(kind: ParentKind, uid: string): Steps<void> {
  for (const sql of deletes[kind]) yield* run(sql, uid);
}
