// Runtime imports: the service table only (generated descriptors). The web console bundles
// this catalog too.
import { type ServiceTable, serviceEntries } from "../service-table.js";
import type { CapabilityOfRule } from "./rule.js";

type Entry = ServiceTable[keyof ServiceTable];
type BlockOf<E> = E extends { capabilities: readonly (infer B)[] } ? B : never;
type CapabilitiesOf<B> = B extends {
  kind: infer K extends string;
  verbs: readonly (infer V extends string)[];
}
  ? `${K}.${V}` | (B extends { also: readonly (infer A)[] } ? A : never)
  : never;

type KindOf<B> = B extends { kind: infer K extends string } ? K : never;
/** The `<kind>` of a catalog entry: `groups`, `repo`, `events.subscriptions`. */
type Kind = KindOf<BlockOf<Entry>>;

/**
 * Capability is one entry of the catalog: `<kind>.<verb>` of a service in the table, or one
 * it adds (`registry.pull`). A union of literals: a name that is not one fails to compile.
 */
export type Capability = CapabilitiesOf<BlockOf<Entry>>;

/**
 * The capability catalog: every capability a role can hold, in the order of the service
 * table. A capability is held at a group and, through the tree, at every group below it.
 * Reads (List and Get) need `<kind>.list`.
 */
export const capabilities: readonly Capability[] = serviceEntries.flatMap((e) =>
  (e.capabilities ?? []).flatMap((c) => [
    ...c.verbs.map((v) => `${c.kind}.${v}`),
    ...(c.also ?? []),
  ]),
) as Capability[];

// Compile-time checks, at no cost at run time: the catalog is made of literals (a widened
// `string` would accept any typo), and every capability a rule of the table names is in it.
type RuleCapabilities = {
  [N in keyof ServiceTable]: CapabilityOfRule<
    ServiceTable[N]["rules"][keyof ServiceTable[N]["rules"]]
  >;
}[keyof ServiceTable];
type Exactly<T> = [T] extends [never] ? true : { notInTheCatalog: T };
/** True, or the compiler names the capability a rule uses that no table entry declares. */
export const rulesNameCatalogCapabilities: Exactly<Exclude<RuleCapabilities, Capability>> = true;
/** True, or the catalog has widened to `string` and checks nothing. */
export const catalogIsLiteral: Exactly<string extends Capability ? string : never> = true;

// What each kind's capabilities act on, and each verb, for one line per capability.
const nouns: Record<Kind, string> = {
  groups: "groups below this one",
  identities: "identities (people and workloads)",
  roles: "custom roles",
  role_bindings: "role bindings: who holds which role where",
  teams: "teams and their members (who holds what the team holds)",
  identity_providers: "the organization's identity providers (sign-in)",
  account_associations: "cloud account associations",
  group_invites: "invites to join a group",
  repo: "container image repositories",
  tag: "image tags",
  advisories: "vulnerability advisories",
  events: "the audit trail of every change",
  "events.subscriptions": "webhook subscriptions to the audit trail",
};
const verbs: Record<string, string> = {
  list: "See",
  create: "Create",
  update: "Change",
  delete: "Delete",
};
const special: Partial<Record<Capability, string>> = {
  "groups.list": "See this group and the groups below it",
  "registry.pull": "Pull images from private repositories",
  "registry.push": "Push images (which creates and moves their tags)",
};

/** One line saying what `capability` lets its holder do, at a group and below it. */
export function capabilityDescription(capability: Capability): string {
  const own = special[capability];
  if (own) return own;
  const dot = capability.lastIndexOf(".");
  const kind = capability.slice(0, dot) as Kind;
  return `${verbs[capability.slice(dot + 1)] ?? capability.slice(dot + 1)} ${nouns[kind]}`;
}

// The other spelling of each kind (`repos.*` for `repo.*`, `group.*` for `groups.*`, the
// real service's `subscriptions.*`): read everywhere a capability name is read, never written.
const kindAliases: Record<string, Kind> = {
  repos: "repo",
  tags: "tag",
  group: "groups",
  identity: "identities",
  role: "roles",
  role_binding: "role_bindings",
  identity_provider: "identity_providers",
  account_association: "account_associations",
  group_invite: "group_invites",
  advisory: "advisories",
  event: "events",
  subscriptions: "events.subscriptions",
  "events.subscription": "events.subscriptions",
};

const catalogSet = new Set<string>(capabilities);

/**
 * The catalog's spelling of `name`: itself when it is one, the canonical name of an alias
 * (`repos.create` is `repo.create`, `role_binding.list` is `role_bindings.list`), else undefined.
 */
export function canonicalCapability(name: string): Capability | undefined {
  if (catalogSet.has(name)) return name as Capability;
  const dot = name.lastIndexOf(".");
  const kind = kindAliases[name.slice(0, dot)];
  const canonical = kind && `${kind}.${name.slice(dot + 1)}`;
  return canonical && catalogSet.has(canonical) ? (canonical as Capability) : undefined;
}
