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
