import { AsyncLocalStorage } from "node:async_hooks";
import { auditedWrites } from "../store/ops/all.js";
import type { Store } from "../store/store.js";
import type { AuditScope, Reason } from "./audit-scope.js";

/**
 * The audit scope of the RPC being served, between the audit interceptor that opens it and
 * the handlers' store (callStore): the one place the call's provenance is ambient. The store
 * itself never reads it: it learns who makes a change from the view it is called through
 * (Store.recording).
 */
export const callScope = new AsyncLocalStorage<AuditScope>();

/**
 * The store the RPC handlers are given: each change a handler makes goes through the store's
 * view for the call being served (`store.recording(scope)`, made once per call), and so records
 * the call's event with it; reads, and writes outside a mutating call, are the store's own.
 */
export function callStore(store: Store): Store {
  const views = new WeakMap<AuditScope, Store>();
  const viewOf = (scope: AuditScope): Store => {
    let view = views.get(scope);
    if (!view) {
      view = store.recording(scope);
      views.set(scope, view);
    }
    return view;
  };
  const current = (): Store => {
    const scope = callScope.getStore();
    return scope ? viewOf(scope) : store;
  };
  // The changes and `atomically` go through the call's view; the rest is the store's own.
  const out = Object.create(store) as Record<string, unknown>;
  for (const name of [...auditedWrites, "atomically"]) {
    out[name] = (...args: unknown[]) =>
      (current() as unknown as Record<string, (...a: unknown[]) => unknown>)[name]!(...args);
  }
  return out as unknown as Store;
}

/**
 * Say why the call being served makes its change (AuditScope.reason), and what made it on the
 * caller's behalf (`via`, uids and names): a handler that redeems an invite says `invite`.
 * Outside a mutating call it does nothing. Call it before the change is written.
 */
export function setCallReason(reason: Reason, via?: Readonly<Record<string, string>>): void {
  const scope = callScope.getStore();
  if (!scope) return;
  scope.reason = reason;
  if (via) scope.via = via;
}
