import { parentOf, rootOf } from "../../uid.js";
import { isEmptyPatch } from "../patch.js";
import { type GroupRow, groupRecordOf, groups } from "../rows/group-rows.js";
import { updateStored } from "../rows/resource.js";
import { deleteCascades, mustHaveNoChildren } from "../rows/resources.js";
import { type GroupPatch, StoreError } from "../store.js";
import { exists, found, lookup, type OpsOf, read, rows, run, write } from "./operation.js";
import {
  claimNamespaceSql,
  mustHoldNamespace,
  registryComponentOf,
  releaseNamespaces,
} from "./registry-namespaces.js";
import { deleteScimRowsOf } from "./scim.js";

/**
 * A groups row as either backend reads it, with the id the closure table refers to. SQLite
 * keeps the parent as an integer id (`parent_id`), PostgreSQL as a uid: the record takes the
 * parent's uid from the group's own, which createGroup makes extend it on both.
 */
type StoredGroup = Omit<GroupRow, "parent_uid"> & { id: number };

/** The record of a stored group, on either backend. */
function recordOf(row: StoredGroup) {
  return groupRecordOf({ ...row, parent_uid: parentOf(row.uid) || null });
}

const selectGroup = groups.select;

const mustFind = (uid: string) => found<StoredGroup>("group", selectGroup, uid);

// The siblings of a group are found by their parent: its id on SQLite, its uid on PostgreSQL.
const siblingNamed = {
  sqlite: `SELECT 1 FROM groups WHERE parent_id = (SELECT id FROM groups WHERE uid = ?)
           AND name = ? AND uid <> ? LIMIT 1`,
  pg: "SELECT 1 FROM groups WHERE parent_uid = ? AND name = ? AND uid <> ? LIMIT 1",
};

// Each group counts the groups strictly below it: a group that goes (a leaf, before its
// closure rows go) lowers the count of every group above it.
const countAbove = `UPDATE groups SET descendant_count = descendant_count - 1
  WHERE id IN (SELECT ancestor FROM group_closure WHERE descendant = ? AND depth > 0)`;

/**
 * The group operations of both backends but createGroup (PostgreSQL's is one CTE, a hook of
 * each backend) and listGroups (each backend's list engine counts a subtree its own way).
 * A group is no access answer's input, so its update keeps the access caches warm; its delete
 * removes the bindings at it, so it does not.
 */
export const groupOps = {
  getGroup: lookup(selectGroup, recordOf),

  // The holder of the namespace, whatever it is named now (ops/registry-namespaces.ts).
  findOrganization: lookup(
    `SELECT g.* FROM registry_namespaces AS n JOIN groups AS g ON g.uid = n.org_uid
     WHERE n.name = ?`,
    recordOf,
  ),

  updateGroup: write(
    function* (uid: string, patch: GroupPatch, now: number) {
      const row = yield* mustFind(uid);
      if (isEmptyPatch(patch)) return recordOf(row);
      const name = patch.name ?? row.name;
      const parent = parentOf(uid);
      if (name !== row.name && parent !== "" && (yield* exists(siblingNamed, parent, name, uid))) {
        throw new StoreError("already_exists", `a sibling group is named ${JSON.stringify(name)}`);
      }
      // An organization named anew must hold (or take) that name's registry namespace: a
      // rename never reaches a namespace another organization holds. Naming it what it is
      // called already takes the namespace only if it is free (one created under a held name
      // gets it once the holder is gone), and is no rename to refuse otherwise.
      if (parent === "" && patch.name !== undefined) {
        const namespace = registryComponentOf(name);
        if (name !== row.name) yield* mustHoldNamespace(namespace, uid, now);
        else yield* run(claimNamespaceSql, namespace, uid, now);
      }
      const updated = yield* updateStored(groups, uid, {
        name,
        description: patch.description ?? row.description,
        update_time: now,
      });
      return recordOf(updated as unknown as StoredGroup);
    },
    { accessNeutral: true },
  ),

  deleteGroup: write(
    function* (uid: string) {
      const { id } = yield* mustFind(uid);
      // What blocks the delete and what goes with it: each resource's declared parent
      // (rows/resources.ts).
      yield* mustHaveNoChildren("group", uid);
      yield* deleteCascades("group", uid);
      // An organization's namespaces are free again once it is gone (none for a subgroup).
      if (parentOf(uid) === "") yield* releaseNamespaces(uid);
      // Its SCIM connection ends with it: no row of a gone organization's directory stays.
      if (parentOf(uid) === "") yield* deleteScimRowsOf(uid);
      yield* run(countAbove, id);
      // A group can only be deleted as a leaf: its only row as an ancestor is its depth-0 row.
      yield* run("DELETE FROM group_closure WHERE descendant = ? OR ancestor = ?", id, id);
      yield* run("DELETE FROM groups WHERE id = ?", id);
    },
    // One organization's tree changes one writer at a time (see Behaviour.turn).
    { turn: (uid: string) => rootOf(uid) },
  ),

  getGroupPath: read(function* (uid: string) {
    const path = yield* rows<{ uid: string }>(
      `SELECT g.uid FROM group_closure AS c JOIN groups AS g ON g.id = c.ancestor
       WHERE c.descendant = (SELECT id FROM groups WHERE uid = ?) ORDER BY c.depth DESC`,
      uid,
    );
    return path.map((r) => r.uid);
  }),
} satisfies OpsOf<"getGroup" | "findOrganization" | "updateGroup" | "deleteGroup" | "getGroupPath">;
