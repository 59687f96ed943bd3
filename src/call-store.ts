import { type ContextValues, createContextKey } from "@connectrpc/connect";
import type { AuditScope, Reason } from "./events/audit-scope.js";
import { auditedWrites } from "./store/ops/all.js";
import type { Store } from "./store/store.js";

/**
 * CallChange is what a call that may change something hands its handler with the call (a
 * context value, kCallChange): its audit scope, and the store's view for it
 * (`store.recording(scope)`), whose changes record the call's event in their transaction.
 * The audit interceptor makes it for each mutating call (src/events/audit-interceptor.ts);
 * reads get none and pay nothing for it.
 */
export interface CallChange {
  /** Undefined when the audit trail is off (the events benchmark): nothing is recorded. */
  readonly scope?: AuditScope;
  readonly store: Store;
}

/** Where a mutating call's CallChange rides, among the call's context values. */
export const kCallChange = createContextKey<CallChange | undefined>(undefined, {
  description: "the call's audit scope and store view",
});

/**
 * The store a handler makes its call's change through: the view its call was handed. A
 * handler that changes something outside a mutating call is a programming error, refused
 * rather than left unrecorded.
 */
export function storeOf(ctx: { readonly values: ContextValues }): Store {
  const change = ctx.values.get(kCallChange);
  if (!change) throw new Error("a change outside a mutating call: it would not be recorded");
  return change.store;
}

/**
 * Say why the call `ctx` makes its change (AuditScope.reason), and what made it on the
 * caller's behalf (`via`, uids and names): a handler that redeems an invite says `invite`.
 * Call it before the change is written; with the audit trail off it does nothing.
 */
export function setCallReason(
  ctx: { readonly values: ContextValues },
  reason: Reason,
  via?: Readonly<Record<string, string>>,
): void {
  const scope = ctx.values.get(kCallChange)?.scope;
  if (!scope) return;
  scope.reason = reason;
  if (via) scope.via = via;
}

/**
 * The store the RPC handlers are built with: the store for their reads, whose changes (and
 * transactions) are refused. A change goes through its call's view (storeOf), so that one a
 * handler wrote on the store itself, recording nothing, fails its tests instead.
 */
export function readingStore(store: Store): Store {
  const out = Object.create(store) as Record<string, unknown>;
  for (const name of [...auditedWrites, "atomically"]) {
    out[name] = () => {
      throw new Error(`store.${name} outside its call's view (storeOf(ctx)) would not be recorded`);
    };
  }
  return out as unknown as Store;
}
