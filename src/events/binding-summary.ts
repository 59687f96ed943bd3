/** A role binding as its events tell it: who had which role where, as named at the time. */
export interface BindingSummary {
  uid: string;
  identity: { uid: string; name: string };
  role: { uid: string; name: string };
  group: { uid: string; name: string };
}

/** The events that carry the binding they made, changed or removed (a grant, a revocation). */
const bindingTypes = new Set([
  "dev.gatehouse.iam.role_binding.created.v1",
  "dev.gatehouse.iam.role_binding.updated.v1",
  "dev.gatehouse.iam.role_binding.deleted.v1",
  "dev.gatehouse.iam.role_binding.expired.v1",
  "dev.gatehouse.iam.group_invite.redeemed.v1",
  "dev.gatehouse.iam.access_request.approved.v1",
]);

type Named = { uid?: unknown; name?: unknown };

/**
 * The binding an event of `type` is about, from its write's result (a role binding record,
 * read in the change's transaction; a redemption's `binding`), or undefined. Uids and names
 * only: what an access review reads once the binding is gone, and never a secret.
 */
export function bindingSummaryOf(type: string, result: unknown): BindingSummary | undefined {
  if (!bindingTypes.has(type) || !result || typeof result !== "object") return undefined;
  const record = ("binding" in result ? result.binding : result) as
    | { uid?: unknown; identity?: Named; role?: Named; group?: Named }
    | undefined;
  if (typeof record?.uid !== "string" || !record.identity || !record.role || !record.group) {
    return undefined;
  }
  const named = (n: Named) => ({ uid: String(n.uid ?? ""), name: String(n.name ?? "") });
  return {
    uid: record.uid,
    identity: named(record.identity),
    role: named(record.role),
    group: named(record.group),
  };
}
