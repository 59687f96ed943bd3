/**
 * Event types no longer recorded, by the type that records the same change now. Until one type
 * per change, a v1 write was recorded under a type derived from its v1 service
 * (`dev.gatehouse.iam.groups.created.v1` where v2 recorded `…iam.group.created.v1`; a batch as
 * `…iam.batch.created.v1`); a v1 write is now recorded as its v2 twin. A webhook subscription
 * that names an old type keeps receiving what that type was about: it matches the current
 * type (matchingSubscriptions), and Create/UpdateSubscription store the current name.
 */
export const legacyEventTypes: Readonly<Record<string, string>> = (() => {
  // The v1 service's noun (its old type's resource) and the v2 resource that records it now.
  const nouns: [domain: string, v1: string, v2: string][] = [
    ["iam", "groups", "group"],
    ["iam", "identities", "identity"],
    ["iam", "roles", "role"],
    ["iam", "role_bindings", "role_binding"],
    ["iam", "identity_providers", "identity_provider"],
    ["iam", "group_account_associations", "account_association"],
    ["iam", "group_invites", "group_invite"],
    ["vulnerabilities", "advisories", "advisory"],
  ];
  const out: Record<string, string> = {
    // v1 RoleBindingsService/CreateBatch: one role_binding.created per binding now.
    "dev.gatehouse.iam.batch.created.v1": "dev.gatehouse.iam.role_binding.created.v1",
  };
  for (const [domain, v1, v2] of nouns) {
    for (const verb of ["created", "updated", "deleted"]) {
      out[`dev.gatehouse.${domain}.${v1}.${verb}.v1`] = `dev.gatehouse.${domain}.${v2}.${verb}.v1`;
    }
  }
  return out;
})();

/** The type recorded now for a change `type` names (itself unless it is a legacy type). */
export function currentEventType(type: string): string {
  return legacyEventTypes[type] ?? type;
}

// Each current type with the legacy names that record the same change now, built once.
const namesByType = new Map<string, readonly string[]>();
for (const [legacy, current] of Object.entries(legacyEventTypes)) {
  namesByType.set(current, [...(namesByType.get(current) ?? [current]), legacy]);
}

/**
 * Every name a subscription may hold that takes an event of `type`: the type and the legacy
 * types it replaced (what the one-statement PostgreSQL append matches subscriptions with).
 */
export function namesTaking(type: string): readonly string[] {
  return namesByType.get(type) ?? [type];
}
