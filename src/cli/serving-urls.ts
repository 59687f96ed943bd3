import type { Config } from "../config.js";
import type { Store } from "../store/store.js";

/** The settings names under which `serve` records the URLs it serves under. */
export const servedUrlSettings = { baseUrl: "serve.base_url", authUrl: "serve.auth_url" } as const;

/** Record, for the commands, the URLs a server on this database serves under. */
export async function recordServingUrls(
  store: Pick<Store, "putSetting">,
  config: Pick<Config, "baseUrl" | "authUrl">,
): Promise<void> {
  await store.putSetting(servedUrlSettings.baseUrl, config.baseUrl);
  await store.putSetting(servedUrlSettings.authUrl, config.authUrl);
}

/**
 * The base and auth URLs a command should mint tokens for: the ones given (flag or
 * environment), else the ones the server last served under on this database, else the
 * defaults. A given URL that differs from the served one is kept, with a warning: such a
 * token is refused by that server.
 */
export async function servingUrls(
  store: Pick<Store, "getSetting">,
  config: Pick<Config, "baseUrl" | "authUrl">,
  given: ReadonlySet<keyof Config>,
  warn: (line: string) => void,
): Promise<{ baseUrl: string; authUrl: string }> {
  const served = {
    baseUrl: await store.getSetting(servedUrlSettings.baseUrl),
    authUrl: await store.getSetting(servedUrlSettings.authUrl),
  };
  const pick = (key: "baseUrl" | "authUrl", env: string, derived: boolean): string => {
    const stored = served[key];
    if (given.has(key) || derived) {
      if (stored !== undefined && stored !== config[key]) {
        warn(
          `warning: the server on this database serves with ${env}=${stored}; ` +
            `a token for ${config[key]} will be refused there`,
        );
      }
      return config[key];
    }
    return stored ?? config[key];
  };
  const baseUrl = pick("baseUrl", "GATEHOUSE_BASE_URL", false);
  // An auth URL that defaults from a base URL given here follows that one.
  const authUrl = pick("authUrl", "GATEHOUSE_AUTH_URL", given.has("baseUrl"));
  return { baseUrl, authUrl };
}
