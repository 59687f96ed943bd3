import type { DescService } from "@bufbuild/protobuf";
import { protocolServices, serviceEntries } from "../service-table.js";
import type { Capability } from "./capabilities.js";
import type { Rule as RuleOf } from "./rule.js";

/** Rule says what one RPC needs (src/auth/rule.ts), naming capabilities of the catalog. */
export type Rule = RuleOf<Capability>;

/**
 * The rules of `services`, by `package.Service/Method`. A rule for a method the service does
 * not have is a mistake in the table (a renamed RPC): it throws, as the server must not start
 * with a rule that guards nothing while the renamed method goes without one.
 */
export function policyOf(
  services: readonly { service: DescService; rules: Readonly<Record<string, RuleOf<string>>> }[],
): Readonly<Record<string, Rule>> {
  // No prototype: an RPC named like an Object method finds no rule.
  const out: Record<string, Rule> = Object.create(null);
  for (const { service, rules } of services) {
    for (const [method, rule] of Object.entries(rules)) {
      if (!service.methods.some((m) => m.name === method)) {
        throw new Error(`the rule for ${service.typeName}/${method} names no method of it`);
      }
      // The compiler checked every capability a rule names against the catalog
      // (capability-catalog.ts), so the widened type is narrowed back safely.
      out[`${service.typeName}/${method}`] = rule as Rule;
    }
  }
  return out;
}

/**
 * The authorization table, derived from the service table (src/service-table.ts): the one
 * place that says what every RPC needs. The server refuses to start if it serves an RPC
 * missing here, and denies any call it was not told about.
 */
export const policy: Readonly<Record<string, Rule>> = policyOf([
  ...serviceEntries,
  ...protocolServices,
]);

/** The rule of an RPC (`package.Service/Method`), or undefined: deny. */
export function ruleOf(rpc: string): Rule | undefined {
  return policy[rpc];
}
