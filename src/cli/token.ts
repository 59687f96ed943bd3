import { createKeyRing } from "../auth/keyring.js";
import { createTokenIssuer } from "../auth/tokens.js";
import { isUid } from "../uid.js";
import { CliError, type CliIo } from "./cli-io.js";
import { parseCommandArgs } from "./command-args.js";
import { databaseName, openCommandDatabase } from "./open-database.js";
import { servingUrls } from "./serving-urls.js";

/** The options of `gatehouse token`. */
export const tokenOptions = {
  identity: { help: "uid of the identity the token is for (required)" },
  aud: { help: "audience: the base URL (default) or the registry audience" },
};

/**
 * `gatehouse token --identity <uid> [--aud <audience>]`: print `{identityUid, token, expiry}`
 * as JSON, a fresh token for an existing identity, signed with the database's key ring. For
 * operators on the server's machine; it does not count as a token exchange (lastSeenTime stays).
 */
export async function token(argv: string[], io: CliIo): Promise<number> {
  const { own, config, given } = parseCommandArgs(argv, tokenOptions, io.env);
  const uid = own.identity ?? "";
  if (uid === "") throw new CliError("--identity is required");
  if (!isUid(uid)) throw new CliError(`--identity: not a valid uid: ${JSON.stringify(uid)}`);
  const store = await openCommandDatabase(config, { create: false });
  try {
    const urls = await servingUrls(store, config, given, (l) => io.err(`gatehouse token: ${l}\n`));
    const aud = own.aud ?? urls.baseUrl;
    const registry = [config.registryAudience, config.registryService].filter((a) => a !== "");
    if (aud !== urls.baseUrl && !registry.includes(aud)) {
      throw new CliError("--aud must be the base URL or the registry audience");
    }
    const identity = await store.getIdentity(uid);
    if (!identity) throw new CliError(`no identity ${uid} in ${databaseName(config)}`, 1);
    const keyRing = createKeyRing({ store });
    const issued = await createTokenIssuer({ keyRing, issuer: urls.authUrl }).issue(
      uid,
      aud,
      identity.email === "" ? {} : { email: identity.email },
    );
    io.out(
      `${JSON.stringify({ identityUid: uid, token: issued.token, expiry: issued.expiry.toISOString() })}\n`,
    );
    return 0;
  } finally {
    await store.close();
  }
}
