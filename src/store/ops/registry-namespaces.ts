/**
 * Registry namespaces: the first component of a registry name (`acme` in `acme/app`) and the
 * organization that holds it. An organization takes the namespace of its name when it is
 * created or renamed while nobody holds it, and holds it until the organization is deleted;
 * a rename adds the new name's namespace and keeps the old one, so nothing ever moves a held
 * namespace to another organization (docs/registry.md "Names").
 */
import { StoreError } from "../store.js";
import { one, run, type Steps } from "./operation.js";

/**
 * Take namespace `name` for organization `orgUid` if nobody holds it; leave it as it is
 * otherwise. The same statement on both backends: the primary key settles two concurrent
 * takers (PostgreSQL's serializable retry, or SQLite's one writer).
 */
export const claimNamespaceSql = `INSERT INTO registry_namespaces (name, org_uid, claim_time)
  VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`;

const holderOf = "SELECT org_uid FROM registry_namespaces WHERE name = ?";

/**
 * Take namespace `name` for `orgUid`, or throw `already_exists` if another organization
 * holds it: what a rename of an organization does before it changes the name.
 */
export function* mustHoldNamespace(name: string, orgUid: string, now: number): Steps<void> {
  yield* run(claimNamespaceSql, name, orgUid, now);
  const holder = yield* one<{ org_uid: string }>(holderOf, name);
  if (holder?.org_uid !== orgUid) {
    throw new StoreError(
      "already_exists",
      `the registry namespace ${JSON.stringify(name)} is held by another organization; ` +
        "an organization holds the namespace of its name from its creation until it is deleted",
    );
  }
}

/** Let go of every namespace `orgUid` holds: the organization is being deleted. */
export function* releaseNamespaces(orgUid: string): Steps<number> {
  return yield* run("DELETE FROM registry_namespaces WHERE org_uid = ?", orgUid);
}
