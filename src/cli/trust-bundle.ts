import { createKeyRing } from "../auth/keyring.js";
import { trustBundle } from "../registry/trust-bundle.js";
import type { CliIo } from "./cli-io.js";
import { parseCommandArgs } from "./command-args.js";
import { openCommandDatabase } from "./open-database.js";

/**
 * `gatehouse registry trust-bundle`: print the PEM bundle a registry's
 * `auth.token.rootcertbundle` needs: a certificate for every key that may sign a registry
 * token, the current one, the pending next one (created here if there is none) and older
 * ones still verifying. A registry started with this bundle keeps verifying through the
 * next `gatehouse keys rotate`, which promotes the pending key.
 */
export async function trustBundleCommand(argv: string[], io: CliIo): Promise<number> {
  const { config } = parseCommandArgs(argv, {}, io.env);
  const store = await openCommandDatabase(config, { create: false });
  try {
    const keyRing = createKeyRing({ store });
    await keyRing.ensureKey();
    await keyRing.prepareNext();
    io.out(trustBundle(await store.listSigningKeys(), Date.now()));
    return 0;
  } finally {
    await store.close();
  }
}
