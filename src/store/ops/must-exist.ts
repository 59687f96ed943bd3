import { notFoundError } from "../store.js";
import { exists, type Steps } from "./operation.js";

// What a new row refers to, by the kind its not_found names.
const existence = {
  group: "SELECT 1 FROM groups WHERE uid = ?",
  identity: "SELECT 1 FROM identities WHERE uid = ?",
  role: "SELECT 1 FROM roles WHERE uid = ?",
  team: "SELECT 1 FROM teams WHERE uid = ?",
} as const;

/** Refuse as not_found a `kind` `uid` that is not there: the group a Create names, say. */
export function* mustExist(kind: keyof typeof existence, uid: string): Steps<void> {
  if (!(yield* exists(existence[kind], uid))) {
    throw notFoundError(kind, uid);
  }
}
