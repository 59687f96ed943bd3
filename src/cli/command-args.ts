import { parseArgs } from "node:util";
import {
  type Config,
  ConfigError,
  compositeSettings,
  loadConfig,
  removedSettings,
  settings,
} from "../config.js";
import { CliError } from "./cli-io.js";

/** A command's own string options, by flag name (without `--`). */
export type OwnOptions = Record<string, { help: string }>;

/**
 * Parse a command's arguments: its own flags, and every server setting flag (`--db`,
 * `--base-url`, …), which go to loadConfig with the environment so that a command sees the
 * same configuration as `serve`. Throws CliError (exit 2) for an unknown flag or bad value.
 */
export function parseCommandArgs<K extends string>(
  argv: string[],
  own: Record<K, { help: string }>,
  env: NodeJS.ProcessEnv = process.env,
): { own: Partial<Record<K, string>>; config: Config; given: ReadonlySet<keyof Config> } {
  const options: Record<string, { type: "string" }> = {};
  // Removed settings parse too, so that loadConfig refuses them by name, not as unknown flags.
  for (const s of [...settings, ...compositeSettings, ...removedSettings]) {
    options[s.flag] = { type: "string" };
  }
  for (const name of Object.keys(own)) options[name] = { type: "string" };
  let values: Record<string, string | undefined>;
  try {
    values = parseArgs({ args: argv, options, strict: true, allowPositionals: false })
      .values as Record<string, string | undefined>;
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  const configArgv: string[] = [];
  for (const s of [...settings, ...compositeSettings, ...removedSettings]) {
    const v = values[s.flag];
    if (v !== undefined) configArgv.push(`--${s.flag}=${v}`);
  }
  const ownValues: Partial<Record<K, string>> = {};
  for (const name of Object.keys(own) as K[]) {
    const v = values[name];
    if (v !== undefined) ownValues[name] = v;
  }
  // The settings given by flag or environment, as opposed to defaulted.
  const given = new Set(
    settings
      .filter((s) => values[s.flag] !== undefined || env[s.env] !== undefined)
      .map((s) => s.key),
  );
  try {
    return { own: ownValues, config: loadConfig(configArgv, env), given };
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(`configuration error: ${err.message}`);
    throw err;
  }
}

/** The `--help` lines of a command's own options. */
export function ownOptionsHelp(own: OwnOptions): string {
  return Object.entries(own)
    .map(([flag, o]) => `  --${flag.padEnd(34)} ${o.help}`)
    .join("\n");
}
