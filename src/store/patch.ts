/**
 * Whether a patch changes nothing (no field set): such an update leaves the record as it is,
 * update time included. Both backends apply this rule, so it lives beside the Store contract.
 */
export function isEmptyPatch(patch: object): boolean {
  return Object.values(patch).every((v) => v === undefined);
}
