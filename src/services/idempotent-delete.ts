import { StoreError } from "../store/store.js";

/**
 * Run a Delete so that deleting what is already gone succeeds, as the real service's SDK
 * expects (a Terraform destroy retries a Delete whose answer it lost). Only a caller the
 * access interceptor let through gets here, one who holds the delete capability at the uid's
 * group or above, so a stranger still gets PERMISSION_DENIED and learns nothing. Nothing
 * changed, so nothing is recorded: the store refused in its transaction.
 */
export async function deleteIfPresent(remove: () => Promise<unknown>): Promise<void> {
  try {
    await remove();
  } catch (err) {
    if (err instanceof StoreError && err.kind === "not_found") return;
    throw err;
  }
}
