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
 * The base and auth URLs a command should mint tokens for. Settings given now (flag or
 * environment) win: a base URL, or a port or TLS certificate that the default base URL derives
 * from; one that differs from the URL the server last served under on this database is kept,
 * with a warning that that server refuses such a token. Without them, the URLs the server last
 * served under, with a note naming them and how to change them; else the defaults.
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
  const pick = (key: "baseUrl" | "authUrl", env: string, givenNow: boolean): string => {
    const stored = served[key];
    // An auth URL that is the base URL, recorded and now, needs no line of its own.
    const follows =
      key === "authUrl" && stored === served.baseUrl && config.authUrl === config.baseUrl;
    if (givenNow) {
      if (stored !== undefined && stored !== config[key] && !follows) {
        warn(
          `warning: minting for ${env}=${config[key]}, as given; the server that last ran on ` +
            `this database serves with ${env}=${stored} and will refuse this token`,
        );
      }
      return config[key];
    }
    if (stored !== undefined && stored !== config[key] && !follows) {
      warn(
        `note: minting for ${env}=${stored}, which the server that last ran on this database ` +
          `serves under; set ${env}${key === "baseUrl" ? " (or GATEHOUSE_PORT)" : ""} for another`,
      );
    }
    return stored ?? config[key];
  };
  // The default base URL is http(s)://localhost:<port>: a port or certificate given now moves it.
  const baseGiven = given.has("baseUrl") || given.has("port") || given.has("tlsCertPath");
  const baseUrl = pick("baseUrl", "GATEHOUSE_BASE_URL", baseGiven);
  // An auth URL that defaults from a base URL given here follows that one.
  const authUrl = pick("authUrl", "GATEHOUSE_AUTH_URL", given.has("authUrl") || baseGiven);
  return { baseUrl, authUrl };
}
