import { type Authorizer, createAuthorizer } from "../auth/authorizer.js";
import type { Store } from "../store/store.js";

/**
 * Run a handler's reads, checks and writes as one store transaction (Store.atomically), with
 * an authorizer that reads through it: the capabilities a grant is checked against are the
 * ones held when the grant commits, on every backend and across replicas. `fn` may run more
 * than once; it must do nothing but read, check and write through `tx`.
 */
export function atomically<R>(
  store: Store,
  fn: (tx: Store, authorizer: Authorizer) => Promise<R>,
): Promise<R> {
  return store.atomically((tx) => fn(tx, createAuthorizer(tx)));
}
