import { registryComponentOf } from "../store/ops/registry-namespaces.js";
import type { RepoRecord } from "../store/registry-store.js";
import type { GroupRecord, Store } from "../store/store.js";
import { parentOf } from "../uid.js";

/** What resolving a registry name reads (and naming a repo: getGroup). */
export type NamesStore = Pick<Store, "resolveRegistryName" | "getGroup">;

/** The longest registry name distribution accepts (its repository name limit). */
export const maxRegistryNameLength = 255;

const component = "[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*";
const registryNamePattern = new RegExp(`^${component}(?:/${component})+$`);

/** Whether `name` can be a registry name: at least `<org>/<repo>`, OCI components. */
export function isRegistryName(name: string): boolean {
  return name.length <= maxRegistryNameLength && registryNamePattern.test(name);
}

/**
 * Resolve registry names (`<namespace>/<group names...>/<repo name>`) to repos. The rule, one
 * repo per name (Store.resolveRegistryName, one query whatever the depth):
 * - a group's name is a component with its spaces as `-` (`acme corp/dev team/app` is
 *   `acme-corp/dev-team/app`); a sibling named exactly as the component wins over one whose
 *   spaces make it so, and an organization holds the namespace of its name so spelled;
 * - the first component is a registry namespace: the organization holding it (from its
 *   creation or a rename while it was free, until it is deleted; see findOrganization), so
 *   no create or rename of another organization can capture or break it;
 * - the rest is read from the organization down: first as a repo name of the organization
 *   itself (repo names may hold `/`), then, if the next component names a subgroup, as a
 *   repo of that subgroup, and so on. A repo higher in the tree wins over a deeper one of the
 *   same address, so nobody who may only create repos in a subgroup can shadow a repo of a
 *   group above it.
 */
export function createRegistryNames(store: NamesStore) {
  const groups = new Map<string, Promise<GroupRecord | undefined>>();
  const groupOf = (uid: string) => {
    let g = groups.get(uid);
    if (!g) {
      g = store.getGroup(uid);
      groups.set(uid, g);
    }
    return g;
  };
  // The repo `name` addresses, or undefined (also for a name that is not well formed).
  async function resolve(name: string): Promise<RepoRecord | undefined> {
    if (!isRegistryName(name)) return undefined;
    return store.resolveRegistryName(name.split("/"));
  }
  return {
    /** The repo `name` addresses, or undefined (also for a name that is not well formed). */
    resolve,

    /**
     * The registry name of `repo`: its organization's and groups' names from the top, then
     * its own, when that name resolves back to this very repo (so it is exactly what the
     * token endpoint accepts for it); undefined otherwise (another organization holds the
     * namespace of its organization's name, a repo of the same address higher in the tree, a
     * name that is not an OCI name).
     * Group names are memoized for the life of this object: make one per request.
     */
    async nameOf(repo: RepoRecord): Promise<string | undefined> {
      const names: string[] = [];
      for (let uid = repo.groupUid; uid !== ""; uid = parentOf(uid)) {
        const group = await groupOf(uid);
        if (!group) return undefined;
        names.unshift(registryComponentOf(group.name));
      }
      const name = `${names.join("/")}/${repo.name}`;
      const found = await resolve(name);
      return found?.uid === repo.uid ? name : undefined;
    },
  };
}

/** RegistryNames resolves registry names to repos. */
export type RegistryNames = ReturnType<typeof createRegistryNames>;
