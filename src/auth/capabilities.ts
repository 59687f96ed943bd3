import { createHash } from "node:crypto";

import { type CapabilityBlock, serviceEntries } from "../service-table.js";
import type { StoreRoles } from "../store/store.js";
import {
  type Capability,
  canonicalCapability,
  capabilities,
  capabilityDescription,
} from "./capability-catalog.js";

export { type Capability, canonicalCapability, capabilities, capabilityDescription };

const known = new Set<string>(capabilities);

/** Whether `s` is a capability of the catalog. */
export function isCapability(s: string): s is Capability {
  return known.has(s);
}

/**
 * The capability of the catalog nearest to `s`, when one is close enough to be what was meant
 * (`repos.create` -> `repo.create`: a typo or the other plural); for error messages.
 */
export function nearestCapability(s: string): Capability | undefined {
  let best: Capability | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const c of capabilities) {
    const d = editDistance(s.slice(0, 64), c);
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(best.length / 4))
    ? best
    : undefined;
}

/** Levenshtein distance between two short strings. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
    }
    prev = row;
  }
  return prev[b.length]!;
}

/** A role every installation has, with the same uid everywhere. */
export interface BuiltinRole {
  uid: string;
  name: string;
  description: string;
  capabilities: readonly Capability[];
}

// Built-in role uids are 40 hex characters derived from the name, so every installation
// agrees on them without a registry.
const builtinUid = (name: string) =>
  createHash("sha1").update(`gatehouse/builtin-role/${name}`).digest("hex");

/** The capabilities of the table's services that `pick` chooses, in catalog order. */
const derived = (pick: (block: CapabilityBlock, verb: string) => boolean): Capability[] =>
  serviceEntries.flatMap((e) =>
    (e.capabilities ?? []).flatMap((c) =>
      c.verbs.filter((v) => pick(c, v)).map((v) => `${c.kind}.${v}` as Capability),
    ),
  );
// Writes the owner role leaves to a role of their own (advisories.admin).
const notOwners = derived((c, v) => c.ownerWrites === false && v !== "list");
const advisoryWrites: readonly Capability[] = [
  "advisories.create",
  "advisories.update",
  "advisories.delete",
];
// Viewers and editors list everything but what is the owners' alone (the audit trail).
const lists = derived((c, v) => v === "list" && c.viewers !== false);
const repoAndTagWrites: Capability[] = [
  "repo.create",
  "repo.update",
  "repo.delete",
  "tag.create",
  "tag.delete",
];

function builtin(name: string, description: string, caps: readonly Capability[]): BuiltinRole {
  return {
    uid: builtinUid(name),
    name,
    description: `Built-in: ${description}`,
    capabilities: caps,
  };
}

// What pulling an image needs besides `registry.pull`: finding its group, repo and tag.
const pullLists: Capability[] = ["groups.list", "repo.list", "tag.list"];

/**
 * The built-in roles of API.md, with the real service's powers where clients rely on them:
 * its `viewer` may pull; `registry.push` may create the nested groups and repos a push names;
 * `registry.pull_token_creator` may make a pull identity and bind it (a binding it makes is
 * bounded by what it holds: `registry.pull` and the lists, at most), and deliberately may not
 * list identities.
 */
export const builtinRoles: readonly BuiltinRole[] = [
  builtin("viewer", "lists and reads everything, and pulls images", [...lists, "registry.pull"]),
  builtin("editor", "viewer plus repo and tag writes", [
    ...lists,
    ...repoAndTagWrites,
    "registry.pull",
    "registry.push",
  ]),
  builtin(
    "owner",
    "every capability but advisory writes",
    capabilities.filter((c) => !notOwners.includes(c)),
  ),
  builtin("registry.pull", "pull images", [...pullLists, "registry.pull"]),
  builtin("registry.push", "pull and push images, creating the groups and repos a push names", [
    ...pullLists,
    "groups.create",
    ...repoAndTagWrites,
    "registry.pull",
    "registry.push",
  ]),
  builtin(
    "registry.pull_token_creator",
    "pull images and make pull identities with their bindings",
    [...pullLists, "roles.list", "identities.create", "role_bindings.create", "registry.pull"],
  ),
  builtin("advisories.admin", "read and write vulnerability advisories", [
    "advisories.list",
    ...advisoryWrites,
  ]),
];

/** The built-in owner role, bound to whoever creates an organization. */
export const ownerRole = builtinRoles.find((r) => r.name === "owner")!;

const builtinByUid = new Map(builtinRoles.map((r) => [r.uid, r]));

/** The built-in role with this uid, or undefined. */
export function builtinRole(uid: string): BuiltinRole | undefined {
  return builtinByUid.get(uid);
}

/** The built-in roles as the server hands them to a store (createSqliteStore's `roles`). */
export const storeRoles: StoreRoles = { builtins: builtinRoles, ownerRoleUid: ownerRole.uid };
