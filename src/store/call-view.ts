import type { AuditScope } from "../events/audit-scope.js";

/**
 * The call a store's view is for (Store.recording). A view is the store itself as prototype
 * and this one property: each backend's guarded methods read it through `this`, so a view
 * costs one object, not a wrapper per method (a wrapper per method made each mutating call
 * about 120 us slower on SQLite). Call a view's methods as methods (`view.createGroup(...)`).
 */
const kScope = Symbol("gatehouse.callScope");

/** The view of `base` for the call `scope`. */
export function callView<S extends object>(base: S, scope: AuditScope): S {
  const view = Object.create(base) as S & { [kScope]: AuditScope };
  view[kScope] = scope;
  return view;
}

/** The call `self` (a method's `this`) is a view for, or undefined for the store itself. */
export function scopeOf(self: unknown): AuditScope | undefined {
  return (self as { [kScope]?: AuditScope } | undefined)?.[kScope];
}
