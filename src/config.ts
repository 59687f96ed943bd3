import { parseArgs } from "node:util";
import {
  parseV1Settings,
  type V1DeprecationSettings,
  v1SettingList,
} from "./deprecation/v1-settings.js";
import { durationForms, parseDurationSeconds } from "./duration.js";
import {
  parseRateLimitSettings,
  type RateLimitSettings,
  rateLimitSettingList,
} from "./rate-limit/rate-limit-settings.js";

/** Config is every setting of a Gatehouse server, validated at start-up. */
export interface Config {
  host: string;
  port: number;
  /** The port of the Prometheus `/metrics` listener (never the API port); undefined: off. */
  metricsPort: number | undefined;
  /** The address the metrics listener binds (default loopback: metrics are not public). */
  metricsHost: string;
  /** The public address of the API; token audience and `iss` default from it. */
  baseUrl: string;
  /** The public address of the token endpoints; defaults to baseUrl. */
  authUrl: string;
  /** The `<service domain>` of ErrorInfo's `iam.<service domain>`. */
  domain: string;
  /** SQLite database file, or ":memory:"; unused when databaseUrl is set. */
  dbPath: string;
  /** A PostgreSQL URL (postgres://...): the store of every replica; "" for SQLite (dbPath). */
  databaseUrl: string;
  tlsCertPath: string;
  tlsKeyPath: string;
  /** Origins allowed by CORS; empty disables CORS, `*` allows any. */
  corsOrigins: string[];
  logLevel: string;
  /**
   * A second audience tokens may be issued for: the registry, as configured (a host such as
   * `registry.example.com` or `127.0.0.1:5000`, or a URL); "" for none.
   */
  registryAudience: string;
  /**
   * The registry's service name (its `auth.token.service`): the host of registryAudience
   * (the setting itself when it is a host); "" when there is no registry.
   */
  registryService: string;
  /** The bearer secret of `/registry/notifications`; "" turns the endpoint off. Never logged. */
  registryNotificationsSecret: string;
  /** Issuers whose tokens log people in without naming an identity. */
  trustedUserIssuers: string[];
  /** Allow plain-http OIDC issuers on loopback addresses (tests and local development). */
  allowInsecureLoopbackIssuers: boolean;
  /**
   * Let organizations' identity providers be on private or loopback addresses (the server
   * then calls into its own network on their behalf). Off by default.
   */
  allowPrivateIssuerAddresses: boolean;
  /** The most identity providers one organization (its groups together) may have. */
  maxIdentityProvidersPerOrganization: number;
  /** How long shutdown waits for in-flight calls before cutting them off. */
  shutdownTimeoutMs: number;
  /** Request body bytes every call in flight may hold at once, on every path. */
  requestBufferBytes: number;
  /** Start even if the database file (which holds the signing keys) is readable by others. */
  allowReadableDb: boolean;
  /**
   * Answer unary gRPC (binary, HTTP/2) and unary Connect POSTs on their lean paths; false sends
   * every call to the Connect router (the same answers, slower; a switch for diagnosis).
   */
  leanPaths: boolean;
  /** The server-wide login provider people sign in through: its issuer, or "" for none. */
  loginIssuer: string;
  loginClientId: string;
  /** "" for a public client. Never logged or returned. */
  loginClientSecret: string;
  /** The provider's name as people see it. */
  loginName: string;
  /** Refuse a sign-in whose ID token carries no verified email. */
  loginRequireVerifiedEmail: boolean;
  /** How long a refresh token is accepted after it was issued, in seconds. */
  refreshTokenTtlSeconds: number;
  /** Open connections in all, on the main port; past it a new one is closed at once. */
  maxConnections: number;
  /** Open connections from one client address; past it a new one is closed at once. */
  maxConnectionsPerAddress: number;
  /** Unanswered requests one HTTP/1.1 connection may pipeline; past it 503 and close. */
  maxPipelinedRequests: number;
  /** Answer bytes a connection may leave unread... */
  maxUnsentBytes: number;
  /** ...for at most this long before it is closed. */
  unsentStallMs: number;
  /**
   * PostgreSQL: the longest a call waits on the database (a connection from the pool, its
   * statements and its commit) before it answers UNAVAILABLE.
   */
  dbTimeoutMs: number;
  /** Requests to /oauth/authorize, and callbacks of a login in flight, per client address a minute. */
  oauthRateLimit: number;
  /** Sign-ins completed through one organization identity provider per minute. */
  signInRateLimit: number;
  /** The rate limits (src/rate-limit/rate-limit-settings.ts; docs/api.md "Rate limits"). */
  rateLimits: RateLimitSettings;
  /** v1's deprecation window (src/deprecation/v1-settings.ts; docs/v1-migration.md). */
  v1Deprecation: V1DeprecationSettings;
  /** How often expired sign-in rows and people who never completed a sign-in are purged. */
  signInPurgeIntervalSeconds: number;
  /** How long a person who holds nothing may go unseen before the sign-in purge deletes them. */
  idlePersonRetentionSeconds: number;
  /** How long the audit trail keeps an event; older ones are pruned in the background. */
  eventRetentionSeconds: number;
  /** Webhook sinks on loopback, over http too (development and tests). */
  webhookAllowHttpLoopback: boolean;
  /** Webhook sinks on private, link-local and reserved addresses. */
  webhookAllowPrivateAddresses: boolean;
  /** Attempts per event and subscription before the delivery is abandoned. */
  webhookMaxAttempts: number;
  /** The wait after a delivery's first failure; each next one doubles (with jitter). */
  webhookRetryBaseMs: number;
  /** The longest wait between two attempts. */
  webhookRetryMaxMs: number;
  /** The longest one delivery attempt may take. */
  webhookTimeoutMs: number;
  /** Delivery attempts in flight at once, per server. */
  webhookConcurrency: number;
  /** Delivery attempts in flight at once for one organization, across servers. */
  webhookOrganizationConcurrency: number;
  /** Delivery attempts in flight at once for one subscription, across servers. */
  webhookSubscriptionConcurrency: number;
  /** How often the outbox is read when the deliverer is idle. */
  webhookPollMs: number;
}

/** Setting describes one configuration entry: its env variable, CLI flag and default. */
interface Setting {
  key: keyof Config;
  env: string;
  flag: string;
  help: string;
  default: string;
}

/** Every setting, in the order the README's table and `--help` show them. */
export const settings: readonly Setting[] = [
  {
    key: "host",
    env: "GATEHOUSE_HOST",
    flag: "host",
    default: "0.0.0.0",
    help: "address to listen on",
  },
  {
    key: "port",
    env: "GATEHOUSE_PORT",
    flag: "port",
    default: "8080",
    help: "port for every protocol",
  },
  {
    key: "metricsPort",
    env: "GATEHOUSE_METRICS_PORT",
    flag: "metrics-port",
    default: "",
    help: "serve Prometheus metrics at /metrics on this port (never the API port); empty: off",
  },
  {
    key: "metricsHost",
    env: "GATEHOUSE_METRICS_HOST",
    flag: "metrics-host",
    default: "127.0.0.1",
    help: "address the metrics port listens on",
  },
  {
    key: "baseUrl",
    env: "GATEHOUSE_BASE_URL",
    flag: "base-url",
    default: "http(s)://localhost:<port>",
    help: "public API address (token audience)",
  },
  {
    key: "authUrl",
    env: "GATEHOUSE_AUTH_URL",
    flag: "auth-url",
    default: "<base-url>",
    help: "public address of the token endpoints (token issuer)",
  },
  {
    key: "domain",
    env: "GATEHOUSE_DOMAIN",
    flag: "domain",
    default: "<host of base-url>",
    help: "service domain in error details (iam.<domain>)",
  },
  {
    key: "dbPath",
    env: "GATEHOUSE_DB",
    flag: "db",
    default: "./data/gatehouse.db",
    help: "SQLite database file",
  },
  {
    key: "databaseUrl",
    env: "GATEHOUSE_DATABASE_URL",
    flag: "database-url",
    default: "",
    help: "PostgreSQL URL (postgres://user:password@host:5432/db) instead of the SQLite file",
  },
  {
    key: "tlsCertPath",
    env: "GATEHOUSE_TLS_CERT",
    flag: "tls-cert",
    default: "",
    help: "PEM certificate; with a key, serve TLS (ALPN h2, http/1.1)",
  },
  {
    key: "tlsKeyPath",
    env: "GATEHOUSE_TLS_KEY",
    flag: "tls-key",
    default: "",
    help: "PEM private key",
  },
  {
    key: "corsOrigins",
    env: "GATEHOUSE_CORS_ORIGINS",
    flag: "cors-origins",
    default: "",
    help: "comma-separated origins allowed by CORS, or *; empty: CORS off",
  },
  {
    key: "logLevel",
    env: "GATEHOUSE_LOG_LEVEL",
    flag: "log-level",
    default: "info",
    help: "fatal, error, warn, info, debug, trace or silent",
  },
  {
    key: "registryAudience",
    env: "GATEHOUSE_REGISTRY_AUDIENCE",
    flag: "registry-audience",
    default: "",
    help: "the registry's service name, a host (registry.example.com, 127.0.0.1:5000) or URL",
  },
  {
    key: "registryNotificationsSecret",
    env: "GATEHOUSE_REGISTRY_NOTIFICATIONS_SECRET",
    flag: "registry-notifications-secret",
    default: "",
    help: "bearer secret of the registry's notifications (prefer the environment variable); empty: off",
  },
  {
    key: "trustedUserIssuers",
    env: "GATEHOUSE_TRUSTED_USER_ISSUERS",
    flag: "trusted-user-issuers",
    default: "",
    help: "comma-separated OIDC issuers that log people in",
  },
  {
    key: "allowInsecureLoopbackIssuers",
    env: "GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS",
    flag: "allow-insecure-loopback-issuers",
    default: "false",
    help: "accept http:// OIDC issuers on 127.0.0.1/localhost",
  },
  {
    key: "allowPrivateIssuerAddresses",
    env: "GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES",
    flag: "allow-private-issuer-addresses",
    default: "false",
    help: "let organizations' identity providers be on private or loopback addresses",
  },
  {
    key: "maxIdentityProvidersPerOrganization",
    env: "GATEHOUSE_MAX_IDENTITY_PROVIDERS_PER_ORG",
    flag: "max-identity-providers-per-org",
    default: "20",
    help: "the most identity providers one organization may have",
  },
  {
    key: "shutdownTimeoutMs",
    env: "GATEHOUSE_SHUTDOWN_TIMEOUT_MS",
    flag: "shutdown-timeout-ms",
    default: "10000",
    help: "grace period for in-flight calls on SIGTERM",
  },
  {
    key: "requestBufferBytes",
    env: "GATEHOUSE_REQUEST_BUFFER_BYTES",
    flag: "request-buffer-bytes",
    default: "67108864",
    help: "request body bytes all calls together may hold while reading them; past it, RESOURCE_EXHAUSTED (503)",
  },
  {
    key: "allowReadableDb",
    env: "GATEHOUSE_ALLOW_READABLE_DB",
    flag: "allow-readable-db",
    default: "false",
    help: "start even if other users can read the database (it holds the signing keys)",
  },
  {
    key: "leanPaths",
    env: "GATEHOUSE_LEAN_PATHS",
    flag: "lean-paths",
    default: "true",
    help: "answer unary gRPC and Connect calls on their lean paths (false: all through the Connect router)",
  },
  {
    key: "loginIssuer",
    env: "GATEHOUSE_LOGIN_ISSUER",
    flag: "login-issuer",
    default: "",
    help: "OIDC issuer people sign in through (server-wide login provider)",
  },
  {
    key: "loginClientId",
    env: "GATEHOUSE_LOGIN_CLIENT_ID",
    flag: "login-client-id",
    default: "",
    help: "Gatehouse's client ID at the login provider",
  },
  {
    key: "loginClientSecret",
    env: "GATEHOUSE_LOGIN_CLIENT_SECRET",
    flag: "login-client-secret",
    default: "",
    help: "its client secret (prefer the environment variable); empty: a public client",
  },
  {
    key: "loginName",
    env: "GATEHOUSE_LOGIN_NAME",
    flag: "login-name",
    default: "<host of login-issuer>",
    help: "the login provider's name as people see it",
  },
  {
    key: "loginRequireVerifiedEmail",
    env: "GATEHOUSE_LOGIN_REQUIRE_VERIFIED_EMAIL",
    flag: "login-require-verified-email",
    default: "false",
    help: "refuse a sign-in whose ID token has no verified email",
  },
  {
    key: "refreshTokenTtlSeconds",
    env: "GATEHOUSE_REFRESH_TOKEN_TTL",
    flag: "refresh-token-ttl",
    default: "7d",
    help: "lifetime of a refresh token (rotated on every use): 3600s, 90m, 12h, 7d",
  },
  {
    key: "maxConnections",
    env: "GATEHOUSE_MAX_CONNECTIONS",
    flag: "max-connections",
    default: "4096",
    help: "open connections in all; past it a new one is closed at once",
  },
  {
    key: "maxConnectionsPerAddress",
    env: "GATEHOUSE_MAX_CONNECTIONS_PER_ADDRESS",
    flag: "max-connections-per-address",
    default: "512",
    help: "open connections from one client address (behind a proxy: the proxy's)",
  },
  {
    key: "maxPipelinedRequests",
    env: "GATEHOUSE_MAX_PIPELINED_REQUESTS",
    flag: "max-pipelined-requests",
    default: "64",
    help: "unanswered requests one HTTP/1.1 connection may pipeline; past it 503 and close",
  },
  {
    key: "maxUnsentBytes",
    env: "GATEHOUSE_MAX_UNSENT_BYTES",
    flag: "max-unsent-bytes",
    default: "4194304",
    help: "answer bytes a connection may leave unread (see unsent-stall-ms)",
  },
  {
    key: "unsentStallMs",
    env: "GATEHOUSE_UNSENT_STALL_MS",
    flag: "unsent-stall-ms",
    default: "10000",
    help: "a connection above max-unsent-bytes this long is closed",
  },
  {
    key: "dbTimeoutMs",
    env: "GATEHOUSE_DB_TIMEOUT_MS",
    flag: "db-timeout-ms",
    default: "5000",
    help: "PostgreSQL: longest wait of a call on the database before UNAVAILABLE",
  },
  {
    key: "oauthRateLimit",
    env: "GATEHOUSE_OAUTH_RATE_LIMIT",
    flag: "oauth-rate-limit",
    default: "60",
    help: "requests to /oauth/authorize, and callbacks of a login in flight, per client address a minute",
  },
  {
    key: "signInRateLimit",
    env: "GATEHOUSE_SIGN_IN_RATE_LIMIT",
    flag: "sign-in-rate-limit",
    default: "120",
    help: "sign-ins through one organization's identity provider a minute",
  },
  ...rateLimitSettingList.map((s) => ({ key: "rateLimits" as const, ...s })),
  ...v1SettingList.map((s) => ({ key: "v1Deprecation" as const, ...s })),
  {
    key: "signInPurgeIntervalSeconds",
    env: "GATEHOUSE_SIGN_IN_PURGE_INTERVAL",
    flag: "sign-in-purge-interval",
    default: "10m",
    help: "how often spent sign-in rows and people who never finished a sign-in are purged",
  },
  {
    key: "idlePersonRetentionSeconds",
    env: "GATEHOUSE_IDLE_PERSON_RETENTION",
    flag: "idle-person-retention",
    default: "90d",
    help: "how long a person holding nothing (no role binding, session, provider or invite) may go unseen before the sign-in purge deletes them (1d to 3650d)",
  },
  {
    key: "eventRetentionSeconds",
    env: "GATEHOUSE_EVENT_RETENTION",
    flag: "event-retention",
    default: "90d",
    help: "how long the audit trail keeps an event (1h to 3650d); older ones are pruned every 10 min",
  },
  {
    key: "webhookAllowHttpLoopback",
    env: "GATEHOUSE_WEBHOOK_ALLOW_HTTP_LOOPBACK",
    flag: "webhook-allow-http-loopback",
    default: "false",
    help: "let webhook sinks be on loopback (127.0.0.1, ::1, localhost), over http too: development only",
  },
  {
    key: "webhookAllowPrivateAddresses",
    env: "GATEHOUSE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES",
    flag: "webhook-allow-private-addresses",
    default: "false",
    help: "let webhook sinks be on private, link-local or reserved addresses (https only)",
  },
  {
    key: "webhookMaxAttempts",
    env: "GATEHOUSE_WEBHOOK_MAX_ATTEMPTS",
    flag: "webhook-max-attempts",
    default: "12",
    help: "delivery attempts per event and subscription before it is abandoned",
  },
  {
    key: "webhookRetryBaseMs",
    env: "GATEHOUSE_WEBHOOK_RETRY_BASE_MS",
    flag: "webhook-retry-base-ms",
    default: "10000",
    help: "wait after a delivery's first failure; doubled after each next one, with jitter",
  },
  {
    key: "webhookRetryMaxMs",
    env: "GATEHOUSE_WEBHOOK_RETRY_MAX_MS",
    flag: "webhook-retry-max-ms",
    default: "3600000",
    help: "longest wait between two delivery attempts",
  },
  {
    key: "webhookTimeoutMs",
    env: "GATEHOUSE_WEBHOOK_TIMEOUT_MS",
    flag: "webhook-timeout-ms",
    default: "10000",
    help: "longest one delivery attempt may take (connection to the end of the answer)",
  },
  {
    key: "webhookConcurrency",
    env: "GATEHOUSE_WEBHOOK_CONCURRENCY",
    flag: "webhook-concurrency",
    default: "8",
    help: "delivery attempts in flight at once, per server",
  },
  {
    key: "webhookOrganizationConcurrency",
    env: "GATEHOUSE_WEBHOOK_ORGANIZATION_CONCURRENCY",
    flag: "webhook-organization-concurrency",
    default: "4",
    help: "delivery attempts in flight at once for one organization, across all servers",
  },
  {
    key: "webhookSubscriptionConcurrency",
    env: "GATEHOUSE_WEBHOOK_SUBSCRIPTION_CONCURRENCY",
    flag: "webhook-subscription-concurrency",
    default: "2",
    help: "delivery attempts in flight at once for one subscription, across all servers",
  },
  {
    key: "webhookPollMs",
    env: "GATEHOUSE_WEBHOOK_POLL_MS",
    flag: "webhook-poll-ms",
    default: "1000",
    help: "how often an idle server reads the webhook outbox",
  },
];

/**
 * Settings that no longer exist. Given one, the server refuses to start and says what replaced
 * it: ignoring it would leave a deployment expecting something the server no longer does.
 */
export const removedSettings: readonly { env: string; flag: string; instead: string }[] = [
  {
    // The grpc-js port (issue 25): a fifth entry point that the one port's connection caps,
    // unsent-bytes budget and pipelining limits did not cover, and no faster than the one port.
    env: "GATEHOUSE_GRPC_PORT",
    flag: "grpc-port",
    instead:
      "the separate gRPC port was removed: the main port (GATEHOUSE_PORT, --port) serves gRPC, " +
      "as it serves Connect, gRPC-Web and REST; point gRPC clients at it and unset this setting",
  },
];

const logLevels = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/** ConfigError is a bad setting, reported at start-up with a clear message. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * Load the configuration from CLI arguments (first), environment variables, then defaults.
 * Throws ConfigError naming the setting for any bad value.
 */
export function loadConfig(argv: string[] = [], env: NodeJS.ProcessEnv = process.env): Config {
  const options = Object.fromEntries(
    [...settings, ...removedSettings].map((s) => [s.flag, { type: "string" as const }]),
  );
  let flags: Record<string, string | undefined>;
  try {
    flags = parseArgs({ args: argv, options, strict: true, allowPositionals: false })
      .values as Record<string, string | undefined>;
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const raw = (s: Pick<Setting, "env" | "flag">): string | undefined => flags[s.flag] ?? env[s.env];
  const get = (key: keyof Config): string | undefined => {
    const s = settings.find((x) => x.key === key)!;
    return raw(s);
  };
  const describe = (key: keyof Config) => {
    const s = settings.find((x) => x.key === key)!;
    return `${s.env} (--${s.flag})`;
  };
  // An integer or boolean setting with its default: the shape most settings share.
  const int = (key: keyof Config, dflt: string, min: number, max: number) =>
    parseInteger(get(key) ?? dflt, describe(key), min, max);
  const bool = (key: keyof Config, dflt: "true" | "false") =>
    parseBool(get(key) ?? dflt, describe(key));

  // Set at all, even empty (once "off"): the setting is gone, so a deployment still naming it
  // learns so now rather than when its gRPC clients cannot connect.
  for (const r of removedSettings) {
    if (raw(r) !== undefined) throw new ConfigError(`${r.env} (--${r.flag}): ${r.instead}`);
  }
  const port = parseInteger(get("port") ?? "8080", describe("port"), 0, 65535);
  const metricsPortSetting = (get("metricsPort") ?? "").trim();
  const metricsPort =
    metricsPortSetting === ""
      ? undefined
      : parseInteger(metricsPortSetting, describe("metricsPort"), 0, 65535);
  if (metricsPort !== undefined && metricsPort !== 0 && [port].includes(metricsPort)) {
    throw new ConfigError(`${describe("metricsPort")}: must differ from the API's ports`);
  }
  const tlsCertPath = get("tlsCertPath") ?? "";
  const tlsKeyPath = get("tlsKeyPath") ?? "";
  if ((tlsCertPath === "") !== (tlsKeyPath === "")) {
    throw new ConfigError("GATEHOUSE_TLS_CERT and GATEHOUSE_TLS_KEY must be set together");
  }
  // With TLS on, the port speaks https: the default base URL (and so every advertised URL)
  // says so.
  const scheme = tlsCertPath === "" ? "http" : "https";
  const baseUrl = parseUrl(get("baseUrl") ?? `${scheme}://localhost:${port}`, describe("baseUrl"));
  const authUrl = parseUrl(get("authUrl") ?? baseUrl, describe("authUrl"));
  const logLevel = get("logLevel") ?? "info";
  if (!logLevels.includes(logLevel)) {
    throw new ConfigError(`${describe("logLevel")}: must be one of ${logLevels.join(", ")}`);
  }
  const registryAudience = (get("registryAudience") ?? "").trim();
  const registryService = serviceName(registryAudience, describe("registryAudience"));
  const registryNotificationsSecret = get("registryNotificationsSecret") ?? "";
  if (registryNotificationsSecret !== "" && registryNotificationsSecret.length < 16) {
    throw new ConfigError(
      `${describe("registryNotificationsSecret")}: must be at least 16 characters`,
    );
  }
  const allowInsecureLoopbackIssuers = bool("allowInsecureLoopbackIssuers", "false");
  const trustedUserIssuers = list(get("trustedUserIssuers"));
  for (const iss of trustedUserIssuers) {
    const u = new URL(parseUrl(iss, describe("trustedUserIssuers")));
    const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname);
    if (u.protocol !== "https:" && !(loopback && allowInsecureLoopbackIssuers)) {
      throw new ConfigError(
        `${describe("trustedUserIssuers")}: ${JSON.stringify(iss)} must be an https URL ` +
          "(http only on a loopback host with GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS=true)",
      );
    }
  }
  const login = loginSettings(get, describe, allowInsecureLoopbackIssuers);
  const corsOrigins = list(get("corsOrigins"));
  for (const origin of corsOrigins) {
    if (origin !== "*" && !isOrigin(origin)) {
      throw new ConfigError(
        `${describe("corsOrigins")}: ${JSON.stringify(origin)} is not an origin ` +
          "(scheme://host[:port], no path) or *",
      );
    }
  }
  const domain = get("domain") ?? new URL(baseUrl).hostname;
  if (!/^[A-Za-z0-9.-]+$/.test(domain)) {
    throw new ConfigError(`${describe("domain")}: not a domain name: ${JSON.stringify(domain)}`);
  }
  return {
    host: get("host") ?? "0.0.0.0",
    port,
    metricsPort,
    metricsHost: get("metricsHost") ?? "127.0.0.1",
    baseUrl,
    authUrl,
    domain,
    dbPath: get("dbPath") ?? "./data/gatehouse.db",
    databaseUrl: parseDatabaseUrl(get("databaseUrl") ?? "", describe("databaseUrl")),
    tlsCertPath,
    tlsKeyPath,
    corsOrigins,
    logLevel,
    registryAudience,
    registryService,
    registryNotificationsSecret,
    trustedUserIssuers,
    allowInsecureLoopbackIssuers,
    allowPrivateIssuerAddresses: bool("allowPrivateIssuerAddresses", "false"),
    maxIdentityProvidersPerOrganization: int(
      "maxIdentityProvidersPerOrganization",
      "20",
      1,
      10_000,
    ),
    shutdownTimeoutMs: int("shutdownTimeoutMs", "10000", 0, 600_000),
    requestBufferBytes: int("requestBufferBytes", "67108864", 1024 * 1024, 2 ** 40),
    allowReadableDb: bool("allowReadableDb", "false"),
    leanPaths: bool("leanPaths", "true"),
    ...login,
    refreshTokenTtlSeconds: parseDuration(
      get("refreshTokenTtlSeconds") ?? "7d",
      describe("refreshTokenTtlSeconds"),
    ),
    oauthRateLimit: int("oauthRateLimit", "60", 1, 1_000_000),
    signInRateLimit: int("signInRateLimit", "120", 1, 1_000_000),
    rateLimits: parseRateLimitSettings(raw, (m) => new ConfigError(m)),
    v1Deprecation: parseV1Settings(raw, (m) => new ConfigError(m)),
    signInPurgeIntervalSeconds: parseDuration(
      get("signInPurgeIntervalSeconds") ?? "10m",
      describe("signInPurgeIntervalSeconds"),
    ),
    idlePersonRetentionSeconds: parseDuration(
      get("idlePersonRetentionSeconds") ?? "90d",
      describe("idlePersonRetentionSeconds"),
      86400,
      3650 * 86400,
    ),
    eventRetentionSeconds: parseDuration(
      get("eventRetentionSeconds") ?? "90d",
      describe("eventRetentionSeconds"),
      3600,
      3650 * 86400,
    ),
    ...connectionSettings(int),
    ...webhookSettings(int, bool),
  };
}

/** The webhook deliveries' settings, as the deliverer takes them (src/webhooks/webhooks.ts). */
export type WebhookSettings = Pick<
  Config,
  | "webhookAllowHttpLoopback"
  | "webhookAllowPrivateAddresses"
  | "webhookMaxAttempts"
  | "webhookRetryBaseMs"
  | "webhookRetryMaxMs"
  | "webhookTimeoutMs"
  | "webhookConcurrency"
  | "webhookOrganizationConcurrency"
  | "webhookSubscriptionConcurrency"
  | "webhookPollMs"
>;

/** The webhook deliveries' settings (docs/events.md "Settings"). */
function webhookSettings(
  int: (key: keyof WebhookSettings, dflt: string, min: number, max: number) => number,
  bool: (key: keyof WebhookSettings, dflt: "true" | "false") => boolean,
): WebhookSettings {
  return {
    webhookAllowHttpLoopback: bool("webhookAllowHttpLoopback", "false"),
    webhookAllowPrivateAddresses: bool("webhookAllowPrivateAddresses", "false"),
    webhookMaxAttempts: int("webhookMaxAttempts", "12", 1, 100),
    webhookRetryBaseMs: int("webhookRetryBaseMs", "10000", 10, 86_400_000),
    webhookRetryMaxMs: int("webhookRetryMaxMs", "3600000", 10, 7 * 86_400_000),
    webhookTimeoutMs: int("webhookTimeoutMs", "10000", 100, 120_000),
    webhookConcurrency: int("webhookConcurrency", "8", 1, 256),
    webhookOrganizationConcurrency: int("webhookOrganizationConcurrency", "4", 1, 256),
    webhookSubscriptionConcurrency: int("webhookSubscriptionConcurrency", "2", 1, 256),
    webhookPollMs: int("webhookPollMs", "1000", 10, 600_000),
  };
}

type ConnectionSettings = Pick<
  Config,
  | "maxConnections"
  | "maxConnectionsPerAddress"
  | "maxPipelinedRequests"
  | "maxUnsentBytes"
  | "unsentStallMs"
  | "dbTimeoutMs"
>;

/** The bounds on connections and database waits (README "Connections, stalls and shutdown"). */
function connectionSettings(
  int: (key: keyof ConnectionSettings, dflt: string, min: number, max: number) => number,
): ConnectionSettings {
  return {
    maxConnections: int("maxConnections", "4096", 1, 1_000_000),
    maxConnectionsPerAddress: int("maxConnectionsPerAddress", "512", 1, 1_000_000),
    maxPipelinedRequests: int("maxPipelinedRequests", "64", 1, 10_000),
    maxUnsentBytes: int("maxUnsentBytes", "4194304", 65_536, 1024 * 1024 * 1024),
    unsentStallMs: int("unsentStallMs", "10000", 100, 600_000),
    dbTimeoutMs: int("dbTimeoutMs", "5000", 50, 600_000),
  };
}

type LoginSettings = Pick<
  Config,
  "loginIssuer" | "loginClientId" | "loginClientSecret" | "loginName" | "loginRequireVerifiedEmail"
>;

/** The server-wide login provider: issuer and client ID together, https unless loopback. */
function loginSettings(
  get: (key: keyof Config) => string | undefined,
  describe: (key: keyof Config) => string,
  allowInsecureLoopback: boolean,
): LoginSettings {
  const issuer = (get("loginIssuer") ?? "").trim();
  const clientId = (get("loginClientId") ?? "").trim();
  const clientSecret = get("loginClientSecret") ?? "";
  if (issuer === "" && (clientId !== "" || clientSecret !== "")) {
    throw new ConfigError(
      `${describe("loginIssuer")}: is required when ${describe("loginClientId")} or ` +
        `${describe("loginClientSecret")} is set`,
    );
  }
  let loginIssuer = "";
  if (issuer !== "") {
    loginIssuer = parseUrl(issuer, describe("loginIssuer"));
    const u = new URL(loginIssuer);
    const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname);
    if (u.protocol !== "https:" && !(loopback && allowInsecureLoopback)) {
      throw new ConfigError(
        `${describe("loginIssuer")}: ${JSON.stringify(issuer)} must be an https URL ` +
          "(http only on a loopback host with GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS=true)",
      );
    }
    if (clientId === "") {
      throw new ConfigError(`${describe("loginClientId")}: is required with a login issuer`);
    }
  }
  return {
    loginIssuer,
    loginClientId: clientId,
    loginClientSecret: clientSecret,
    // An empty name is no name: people see the issuer's host (and discovery names a provider).
    loginName: get("loginName")?.trim() || (loginIssuer === "" ? "" : new URL(loginIssuer).host),
    loginRequireVerifiedEmail: parseBool(
      get("loginRequireVerifiedEmail") ?? "false",
      describe("loginRequireVerifiedEmail"),
    ),
  };
}

/** A PostgreSQL URL as `pg` takes it, or "" (SQLite). The message never repeats a password. */
function parseDatabaseUrl(v: string, name: string): string {
  const url = v.trim();
  if (url === "") return "";
  let u: URL | undefined;
  try {
    u = new URL(url);
  } catch {
    u = undefined;
  }
  if (!u || (u.protocol !== "postgres:" && u.protocol !== "postgresql:") || u.hostname === "") {
    throw new ConfigError(
      `${name}: not a PostgreSQL URL (postgres://user:password@host:5432/database)`,
    );
  }
  return url;
}

/** A database URL fit for a log line or a message: the password replaced by "***". */
export function redactedDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== "") u.password = "***";
    for (const key of [...u.searchParams.keys()]) {
      if (/pass|secret|key/i.test(key)) u.searchParams.set(key, "***");
    }
    return u.toString();
  } catch {
    return "(unparsable URL)";
  }
}

/** A duration setting (parseDurationSeconds' forms), by default between 60 s and 365 d. */
function parseDuration(v: string, name: string, min = 60, max = 365 * 86400): number {
  const seconds = parseDurationSeconds(v) ?? Number.NaN;
  if (!(seconds >= min && seconds <= max)) {
    const bounds = `${formatSeconds(min)} and ${formatSeconds(max)}`;
    throw new ConfigError(
      `${name}: ${JSON.stringify(v)} is not a duration between ${bounds} (${durationForms})`,
    );
  }
  return seconds;
}

/** A bound of a duration setting as its message names it: 60s, 1h, 365d. */
function formatSeconds(s: number): string {
  if (s % 86400 === 0) return `${s / 86400}d`;
  if (s % 3600 === 0) return `${s / 3600}h`;
  return `${s}s`;
}

/** Whether `v` is a web origin exactly as a browser sends it: scheme, host, optional port. */
function isOrigin(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === "http:" || u.protocol === "https:") && u.origin === v;
  } catch {
    return false;
  }
}

function list(v: string | undefined): string[] {
  return (v ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

function parseInteger(v: string, name: string, min: number, max: number): number {
  if (!/^\d+$/.test(v.trim()))
    throw new ConfigError(`${name}: not an integer: ${JSON.stringify(v)}`);
  const n = Number(v);
  if (n < min || n > max) throw new ConfigError(`${name}: must be between ${min} and ${max}`);
  return n;
}

function parseBool(v: string, name: string): boolean {
  if (/^(true|1|yes)$/i.test(v)) return true;
  if (/^(false|0|no|)$/i.test(v)) return false;
  throw new ConfigError(`${name}: not a boolean: ${JSON.stringify(v)}`);
}

/**
 * The registry's service name from GATEHOUSE_REGISTRY_AUDIENCE: a host with an optional port
 * as given, or the host of a URL (the older form of the setting).
 */
function serviceName(v: string, name: string): string {
  if (v === "") return "";
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(v)) return new URL(parseUrl(v, name)).host;
  const m =
    /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?$/.exec(
      v,
    );
  if (!m || (m[1] !== undefined && Number(m[1]) > 65535)) {
    throw new ConfigError(
      `${name}: not a host (registry.example.com, 127.0.0.1:5000) or URL: ${JSON.stringify(v)}`,
    );
  }
  return v;
}

/** Normalize a URL setting: http(s) only, no trailing slash. */
function parseUrl(v: string, name: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new ConfigError(`${name}: not a URL: ${JSON.stringify(v)}`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new ConfigError(`${name}: must be an http or https URL`);
  }
  return u.toString().replace(/\/$/, "");
}

/** The `--help` text of the settings, one per line. */
export function settingsHelp(): string {
  return settings
    .map((s) => `  --${s.flag.padEnd(34)} ${s.env.padEnd(42)} ${s.help} [${s.default || "empty"}]`)
    .join("\n");
}
