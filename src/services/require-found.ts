import { notFound } from "../errors.js";
import { checkUid, violations } from "../validation/field-rules.js";

/**
 * Check that `uid` is a well-formed uid (INVALID_ARGUMENT on `field` otherwise), load it with
 * `get`, and throw NOT_FOUND naming `kind` when there is nothing there. The access interceptor
 * has already decided whether the caller may learn that.
 */
export async function requireFound<T>(
  kind: string,
  uid: string,
  get: (uid: string) => Promise<T | undefined>,
  field = "uid",
): Promise<T> {
  const v = violations();
  checkUid(v, field, uid);
  v.throwIfAny();
  const found = await get(uid);
  if (found === undefined) throw notFound(kind, uid);
  return found;
}
