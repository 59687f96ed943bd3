import { expect, it } from "vitest";
import { ConfigError, loadConfig, type Setting, settings } from "../../src/config.js";

// The settings table (src/config.ts) is the one place a setting's parser, range and default
// live: loadConfig derives from it, and a bad value is refused at start-up with a message that
// names the variable and its flag, what it was given, and what is allowed.

/** loadConfig's error for `env`, or a failure when it loads. */
function refusal(env: Record<string, string>): string {
  try {
    loadConfig([], env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
}

it("starts from the table's defaults, each parsed as a given value would be", () => {
  const config = loadConfig([], {});
  for (const s of settings) {
    if (typeof s.default !== "string") continue;
    const given = loadConfig([], { [s.env]: s.default }) as unknown as Record<string, unknown>;
    expect({ key: s.key, value: (config as unknown as Record<string, unknown>)[s.key] }).toEqual({
      key: s.key,
      value: given[s.key],
    });
  }
  // The derived ones: from the port, the base URL and nothing else given.
  expect(config.baseUrl).toBe("http://localhost:8080");
  expect(config.authUrl).toBe(config.baseUrl);
  expect(config.domain).toBe("localhost");
  expect(config.loginName).toBe("");
  expect(loadConfig([], { GATEHOUSE_TLS_CERT: "c", GATEHOUSE_TLS_KEY: "k" }).baseUrl).toBe(
    "https://localhost:8080",
  );
});

it.each<[string, Record<string, string>, string]>([
  [
    "an integer out of range",
    { GATEHOUSE_MAX_CONNECTIONS: "0" },
    'GATEHOUSE_MAX_CONNECTIONS (--max-connections): "0" is not an integer between 1 and 1000000',
  ],
  [
    "an integer that is not one",
    { GATEHOUSE_WEBHOOK_MAX_ATTEMPTS: "12x" },
    'GATEHOUSE_WEBHOOK_MAX_ATTEMPTS (--webhook-max-attempts): "12x" is not an integer between 1 and 100',
  ],
  [
    "a port out of range",
    { GATEHOUSE_METRICS_PORT: "70000" },
    'GATEHOUSE_METRICS_PORT (--metrics-port): "70000" is not an integer between 0 and 65535',
  ],
  [
    "a boolean that is not one",
    { GATEHOUSE_LEAN_PATHS: "sometimes" },
    'GATEHOUSE_LEAN_PATHS (--lean-paths): not a boolean: "sometimes" (true or false)',
  ],
  [
    "a log level not in the list",
    { GATEHOUSE_LOG_LEVEL: "loud" },
    'GATEHOUSE_LOG_LEVEL (--log-level): "loud" is not one of fatal, error, warn, info, debug, trace, silent',
  ],
  [
    "a duration out of range",
    { GATEHOUSE_EVENT_RETENTION: "30m" },
    'GATEHOUSE_EVENT_RETENTION (--event-retention): "30m" is not a duration between 1h and 3650d (5d, 12h, 30m, 3600s or plain seconds)',
  ],
  [
    "a URL of another scheme",
    { GATEHOUSE_BASE_URL: "ftp://example.com" },
    'GATEHOUSE_BASE_URL (--base-url): "ftp://example.com" is not an http or https URL',
  ],
  [
    "a derived default that does not fit its setting",
    { GATEHOUSE_BASE_URL: "http://[::1]:8080" },
    'GATEHOUSE_DOMAIN (--domain): not a domain name: "[::1]" (letters, digits, dots and hyphens)',
  ],
  [
    "the metrics port on the API's port",
    { GATEHOUSE_PORT: "9000", GATEHOUSE_METRICS_PORT: "9000" },
    "GATEHOUSE_METRICS_PORT (--metrics-port): 9000 is the API's port; it must differ",
  ],
])("refuses %s, naming the setting, what it got and what is allowed", (_what, env, message) => {
  expect(refusal(env)).toBe(message);
});

it("refuses a bad value of every setting that checks one, naming it and what it got, secrets aside", () => {
  // The database URL may hold a password and the notifications secret is one: their messages
  // say what is wrong without repeating them.
  const secrets = new Set<Setting["key"]>(["databaseUrl", "registryNotificationsSecret"]);
  const bad = "@bad value";
  let refused = 0;
  for (const s of settings) {
    // Free text (a path, an address, a name) takes any value; a rule between settings may
    // still refuse a combination (a certificate without its key), and says so in its words.
    if (acceptsAnyText(s)) continue;
    const message = refusal({ [s.env]: bad });
    refused++;
    expect(message.startsWith(`${s.env} (--${s.flag}): `)).toBe(true);
    if (secrets.has(s.key)) expect(message).not.toContain(bad);
    else expect(message).toContain(JSON.stringify(bad));
  }
  expect(refused).toBeGreaterThan(30);
});

/** Whether a setting's parser takes any text (the kinds `text` and `trimmed`). */
function acceptsAnyText(s: Setting): boolean {
  const kind = s.kind as (text: string, name: string) => unknown;
  return ["@bad value", "x y", ""].every((v) => {
    try {
      return kind(v, s.env) === v || kind(v, s.env) === v.trim();
    } catch {
      return false;
    }
  });
}

it("takes a flag before the environment, and an empty login name as none given", () => {
  const c = loadConfig(["--port", "9001"], {
    GATEHOUSE_PORT: "9000",
    GATEHOUSE_LOGIN_ISSUER: "https://login.example.com/",
    GATEHOUSE_LOGIN_CLIENT_ID: "gatehouse",
    GATEHOUSE_LOGIN_NAME: " ",
  });
  expect(c.port).toBe(9001);
  expect(c.baseUrl).toBe("http://localhost:9001");
  expect(c.loginIssuer).toBe("https://login.example.com");
  expect(c.loginName).toBe("login.example.com");
});
