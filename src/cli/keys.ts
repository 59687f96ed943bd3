import { createKeyRing } from "../auth/keyring.js";
import { CliError, type CliIo } from "./cli-io.js";
import { parseCommandArgs } from "./command-args.js";
import { openCommandDatabase } from "./open-database.js";

/**
 * `gatehouse keys rotate`: add a new signing key to the database's key ring and print
 * `{kid, keys}` as JSON. Servers on the database sign with it once they refresh their view
 * (within a minute); older keys keep verifying until no token they signed can be valid.
 */
export async function keys(argv: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== "rotate") {
    throw new CliError(`keys: unknown subcommand ${JSON.stringify(sub ?? "")}; try: keys rotate`);
  }
  const { config } = parseCommandArgs(rest, {}, io.env);
  const store = await openCommandDatabase(config, { create: false });
  try {
    const keyRing = createKeyRing({ store });
    const kid = await keyRing.rotate();
    const published = (await keyRing.publicJwks()).keys.map((k) => k.kid);
    io.out(`${JSON.stringify({ kid, keys: published })}\n`);
    return 0;
  } finally {
    await store.close();
  }
}
