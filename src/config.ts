import { parseArgs } from "node:util";
import {
  parseV1Settings,
  type V1DeprecationSettings,
  v1SettingList,
} from "./deprecation/v1-settings.js";
import {
  parseRateLimitSettings,
  type RateLimitSettings,
  rateLimitSettingList,
} from "./rate-limit/rate-limit-settings.js";
import {
  boolean,
  ConfigError,
  databaseUrl,
  domainName,
  duration,
  hostOrUrl,
  integer,
  issuer,
  type Kind,
  list,
  oneOf,
  optionalPort,
  optionalUrl,
  origin,
  registryHost,
  secret,
  text,
  trimmed,
  url,
} from "./setting-kinds.js";

export { ConfigError };

/** The values of GATEHOUSE_ORGANIZATION_CREATION. */
export const organizationCreationModes = ["anyone", "allowed-domains", "bootstrap"] as const;
/** Who may create an organization (Config.organizationCreation). */
export type OrganizationCreation = (typeof organizationCreationModes)[number];

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
  /**
   * Who may create an organization: `anyone` who signs in, people whose verified email is in
   * one of organizationCreationDomains (`allowed-domains`), or no one but `gatehouse bootstrap`
   * (`bootstrap`). Off `anyone`, a person who came through an organization's provider never may.
   */
  organizationCreation: OrganizationCreation;
  /** The email domains of `allowed-domains`, lower case. */
  organizationCreationDomains: string[];
  /** How long a refresh token is accepted after it was issued, in seconds. */
  refreshTokenTtlSeconds: number;
  /** Open connections in all, on the main port; past it a new one is closed at once. */
  maxConnections: number;
  /** Open connections from one client address; past it a new one is closed at once. */
  maxConnectionsPerAddress: number;
  /** Unanswered requests one HTTP/1.1 connection may pipeline; past it 503 and close. */
  maxPipelinedRequests: number;
  /** Requests of one client address running at once; the next wait their turn (none refused). */
  maxRunningPerAddress: number;
  /** Requests started in one turn of the event loop; the next start in later turns, by address. */
  maxStartsPerTurn: number;
  /** HTTP/2 connections of one client address that may have 100 streams; later ones get 8. */
  wideSessionsPerAddress: number;
  /** Answer bytes a connection may leave unread... */
  maxUnsentBytes: number;
  /** ...for at most this long before it is closed. */
  unsentStallMs: number;
  /**
   * PostgreSQL: the longest a call waits on the database (a connection from the pool, its
   * statements and its commit) before it answers UNAVAILABLE.
   */
  dbTimeoutMs: number;
  /** PostgreSQL: the change feed's heartbeat; a feed silent 1.5 times this is presumed lost. */
  dbHeartbeatMs: number;
  /** Requests to /oauth/authorize, and callbacks of a login in flight, per client address a minute. */
  oauthRateLimit: number;
  /** Sign-ins completed through one organization identity provider per minute. */
  signInRateLimit: number;
  /** User codes a client address may enter at the device flow's verification page a minute. */
  deviceCodeRateLimit: number;
  /** The least time between two polls of a device code (RFC 8628 `interval`), in seconds. */
  deviceCodeIntervalSeconds: number;
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
  /** How long past an attempt's timeout its lease still keeps other claims off. */
  webhookLeaseMarginMs: number;
  /** Delivery attempts in flight at once, per server. */
  webhookConcurrency: number;
  /** Delivery attempts in flight at once for one organization, across servers. */
  webhookOrganizationConcurrency: number;
  /** Delivery attempts in flight at once for one subscription, across servers. */
  webhookSubscriptionConcurrency: number;
  /** How often the outbox is read when the deliverer is idle. */
  webhookPollMs: number;
}

/** The Config values that several settings make together, each parsed by a module of its own. */
type Composite = "rateLimits" | "v1Deprecation";

/** Settings is what the settings table gives: Config but for what derives from it. */
type Settings = Omit<Config, "registryService" | Composite>;

/**
 * A default derived from settings before it in the table (or any setting with a plain
 * default): the text `from` gives is parsed as a given value would be.
 */
interface Derived {
  /** The default as `--help` and the README show it. */
  shows: string;
  from(settings: Settings): string;
  /** An empty value is no value: the default stands. */
  blank?: true;
}

/** SettingOf describes one setting: its variable, flag, parser (with its range) and default. */
interface SettingOf<K extends keyof Settings> {
  key: K;
  env: string;
  flag: string;
  /** How its text becomes its value, and what it accepts (src/setting-kinds.ts). */
  kind: Kind<Settings[K]>;
  /** The text it has when not given, parsed as a given one is; or derived from others. */
  default: string | Derived;
  help: string;
}

/** Setting is one entry of the settings table. */
export type Setting = { [K in keyof Settings]: SettingOf<K> }[keyof Settings];

const logLevels = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];
const day = 86400;

/**
 * Every setting, once: its variable, flag, parser and range, default and help, in the order
 * `--help` and the README's table show them (test/docs/settings-table.test.ts holds the
 * README to it). A new setting is one entry here and its field in Config.
 */
const table = [
  {
    key: "host",
    env: "GATEHOUSE_HOST",
    flag: "host",
    kind: text,
    default: "0.0.0.0",
    help: "address to listen on",
  },
  {
    key: "port",
    env: "GATEHOUSE_PORT",
    flag: "port",
    kind: integer(0, 65535),
    default: "8080",
    help: "port for every protocol",
  },
  {
    key: "metricsPort",
    env: "GATEHOUSE_METRICS_PORT",
    flag: "metrics-port",
    kind: optionalPort,
    default: "",
    help: "serve Prometheus metrics at /metrics on this port (never the API port); empty: off",
  },
  {
    key: "metricsHost",
    env: "GATEHOUSE_METRICS_HOST",
    flag: "metrics-host",
    kind: text,
    default: "127.0.0.1",
    help: "address the metrics port listens on",
  },
  {
    key: "baseUrl",
    env: "GATEHOUSE_BASE_URL",
    flag: "base-url",
    kind: url,
    default: {
      shows: "http(s)://localhost:<port>",
      from: (c) => `${c.tlsCertPath === "" ? "http" : "https"}://localhost:${c.port}`,
    },
    help: "public API address (token audience)",
  },
  {
    key: "authUrl",
    env: "GATEHOUSE_AUTH_URL",
    flag: "auth-url",
    kind: url,
    default: { shows: "<base-url>", from: (c) => c.baseUrl },
    help: "public address of the token endpoints (token issuer)",
  },
  {
    key: "domain",
    env: "GATEHOUSE_DOMAIN",
    flag: "domain",
    kind: domainName,
    default: { shows: "<host of base-url>", from: (c) => new URL(c.baseUrl).hostname },
    help: "service domain in error details (iam.<domain>)",
  },
  {
    key: "dbPath",
    env: "GATEHOUSE_DB",
    flag: "db",
    kind: text,
    default: "./data/gatehouse.db",
    help: "SQLite database file",
  },
  {
    key: "databaseUrl",
    env: "GATEHOUSE_DATABASE_URL",
    flag: "database-url",
    kind: databaseUrl,
    default: "",
    help: "PostgreSQL URL (postgres://user:password@host:5432/db) instead of the SQLite file",
  },
  {
    key: "tlsCertPath",
    env: "GATEHOUSE_TLS_CERT",
    flag: "tls-cert",
    kind: text,
    default: "",
    help: "PEM certificate; with a key, serve TLS (ALPN h2, http/1.1)",
  },
  {
    key: "tlsKeyPath",
    env: "GATEHOUSE_TLS_KEY",
    flag: "tls-key",
    kind: text,
    default: "",
    help: "PEM private key",
  },
  {
    key: "corsOrigins",
    env: "GATEHOUSE_CORS_ORIGINS",
    flag: "cors-origins",
    kind: list(origin),
    default: "",
    help: "comma-separated origins allowed by CORS, or *; empty: CORS off",
  },
  {
    key: "logLevel",
    env: "GATEHOUSE_LOG_LEVEL",
    flag: "log-level",
    kind: oneOf(logLevels),
    default: "info",
    help: "fatal, error, warn, info, debug, trace or silent",
  },
  {
    key: "registryAudience",
    env: "GATEHOUSE_REGISTRY_AUDIENCE",
    flag: "registry-audience",
    kind: hostOrUrl,
    default: "",
    help: "the registry's service name, a host (registry.example.com, 127.0.0.1:5000) or URL",
  },
  {
    key: "registryNotificationsSecret",
    env: "GATEHOUSE_REGISTRY_NOTIFICATIONS_SECRET",
    flag: "registry-notifications-secret",
    kind: secret(16),
    default: "",
    help: "bearer secret of the registry's notifications (prefer the environment variable); empty: off",
  },
  {
    key: "trustedUserIssuers",
    env: "GATEHOUSE_TRUSTED_USER_ISSUERS",
    flag: "trusted-user-issuers",
    kind: list(issuer),
    default: "",
    help: "comma-separated OIDC issuers that log people in",
  },
  {
    key: "allowInsecureLoopbackIssuers",
    env: "GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS",
    flag: "allow-insecure-loopback-issuers",
    kind: boolean,
    default: "false",
    help: "accept http:// OIDC issuers on 127.0.0.1/localhost",
  },
  {
    key: "allowPrivateIssuerAddresses",
    env: "GATEHOUSE_ALLOW_PRIVATE_ISSUER_ADDRESSES",
    flag: "allow-private-issuer-addresses",
    kind: boolean,
    default: "false",
    help: "let organizations' identity providers be on private or loopback addresses",
  },
  {
    key: "maxIdentityProvidersPerOrganization",
    env: "GATEHOUSE_MAX_IDENTITY_PROVIDERS_PER_ORG",
    flag: "max-identity-providers-per-org",
    kind: integer(1, 10_000),
    default: "20",
    help: "the most identity providers one organization may have",
  },
  {
    key: "shutdownTimeoutMs",
    env: "GATEHOUSE_SHUTDOWN_TIMEOUT_MS",
    flag: "shutdown-timeout-ms",
    kind: integer(0, 600_000),
    default: "10000",
    help: "grace period for in-flight calls on SIGTERM",
  },
  {
    key: "requestBufferBytes",
    env: "GATEHOUSE_REQUEST_BUFFER_BYTES",
    flag: "request-buffer-bytes",
    kind: integer(1024 * 1024, 2 ** 40),
    default: "67108864",
    help: "request body bytes all calls together may hold while reading them; past it, RESOURCE_EXHAUSTED (503)",
  },
  {
    key: "allowReadableDb",
    env: "GATEHOUSE_ALLOW_READABLE_DB",
    flag: "allow-readable-db",
    kind: boolean,
    default: "false",
    help: "start even if other users can read the database (it holds the signing keys)",
  },
  {
    key: "leanPaths",
    env: "GATEHOUSE_LEAN_PATHS",
    flag: "lean-paths",
    kind: boolean,
    default: "true",
    help: "answer unary gRPC and Connect calls on their lean paths (false: all through the Connect router)",
  },
  {
    key: "loginIssuer",
    env: "GATEHOUSE_LOGIN_ISSUER",
    flag: "login-issuer",
    kind: optionalUrl,
    default: "",
    help: "OIDC issuer people sign in through (server-wide login provider)",
  },
  {
    key: "loginClientId",
    env: "GATEHOUSE_LOGIN_CLIENT_ID",
    flag: "login-client-id",
    kind: trimmed,
    default: "",
    help: "Gatehouse's client ID at the login provider",
  },
  {
    key: "loginClientSecret",
    env: "GATEHOUSE_LOGIN_CLIENT_SECRET",
    flag: "login-client-secret",
    kind: text,
    default: "",
    help: "its client secret (prefer the environment variable); empty: a public client",
  },
  {
    key: "loginName",
    env: "GATEHOUSE_LOGIN_NAME",
    flag: "login-name",
    kind: trimmed,
    default: {
      shows: "<host of login-issuer>",
      from: (c) => (c.loginIssuer === "" ? "" : new URL(c.loginIssuer).host),
      // An empty name is no name: people see the issuer's host (and discovery names a provider).
      blank: true,
    },
    help: "the login provider's name as people see it",
  },
  {
    key: "loginRequireVerifiedEmail",
    env: "GATEHOUSE_LOGIN_REQUIRE_VERIFIED_EMAIL",
    flag: "login-require-verified-email",
    kind: boolean,
    default: "false",
    help: "refuse a sign-in whose ID token has no verified email",
  },
  {
    key: "organizationCreation",
    env: "GATEHOUSE_ORGANIZATION_CREATION",
    flag: "organization-creation",
    kind: oneOf(organizationCreationModes) as Kind<OrganizationCreation>,
    default: "anyone",
    help: "who may create organizations: anyone, allowed-domains or bootstrap",
  },
  {
    key: "organizationCreationDomains",
    env: "GATEHOUSE_ORGANIZATION_CREATION_DOMAINS",
    flag: "organization-creation-domains",
    kind: list((v, name) => domainName(v, name).toLowerCase()),
    default: "",
    help: "comma-separated email domains whose people may create organizations (allowed-domains)",
  },
  {
    key: "refreshTokenTtlSeconds",
    env: "GATEHOUSE_REFRESH_TOKEN_TTL",
    flag: "refresh-token-ttl",
    kind: duration(60, 365 * day),
    default: "7d",
    help: "lifetime of a refresh token (rotated on every use): 3600s, 90m, 12h, 7d",
  },
  {
    key: "maxConnections",
    env: "GATEHOUSE_MAX_CONNECTIONS",
    flag: "max-connections",
    kind: integer(1, 1_000_000),
    default: "4096",
    help: "open connections in all; past it a new one is closed at once",
  },
  {
    key: "maxConnectionsPerAddress",
    env: "GATEHOUSE_MAX_CONNECTIONS_PER_ADDRESS",
    flag: "max-connections-per-address",
    kind: integer(1, 1_000_000),
    default: "512",
    help: "open connections from one client address (behind a proxy: the proxy's)",
  },
  {
    key: "maxRunningPerAddress",
    env: "GATEHOUSE_MAX_RUNNING_PER_ADDRESS",
    flag: "max-running-per-address",
    kind: integer(1, 1_000_000),
    default: "64",
    help: "requests of one client address running at once; the next wait their turn",
  },
  {
    key: "maxStartsPerTurn",
    env: "GATEHOUSE_MAX_STARTS_PER_TURN",
    flag: "max-starts-per-turn",
    kind: integer(1, 1_000_000),
    default: "16",
    help: "requests started in one turn of the event loop; the next start round-robin by address",
  },
  {
    key: "wideSessionsPerAddress",
    env: "GATEHOUSE_WIDE_SESSIONS_PER_ADDRESS",
    flag: "wide-sessions-per-address",
    kind: integer(0, 1_000_000),
    default: "4",
    help: "HTTP/2 connections of one client address that may open 100 streams; later ones get 8",
  },
  {
    key: "maxPipelinedRequests",
    env: "GATEHOUSE_MAX_PIPELINED_REQUESTS",
    flag: "max-pipelined-requests",
    kind: integer(1, 10_000),
    default: "64",
    help: "unanswered requests one HTTP/1.1 connection may pipeline; past it 503 and close",
  },
  {
    key: "maxUnsentBytes",
    env: "GATEHOUSE_MAX_UNSENT_BYTES",
    flag: "max-unsent-bytes",
    kind: integer(65_536, 1024 * 1024 * 1024),
    default: "4194304",
    help: "answer bytes a connection may leave unread (see unsent-stall-ms)",
  },
  {
    key: "unsentStallMs",
    env: "GATEHOUSE_UNSENT_STALL_MS",
    flag: "unsent-stall-ms",
    kind: integer(100, 600_000),
    default: "10000",
    help: "a connection above max-unsent-bytes this long is closed",
  },
  {
    key: "dbTimeoutMs",
    env: "GATEHOUSE_DB_TIMEOUT_MS",
    flag: "db-timeout-ms",
    kind: integer(50, 600_000),
    default: "5000",
    help: "PostgreSQL: longest wait of a call on the database before UNAVAILABLE",
  },
  {
    key: "dbHeartbeatMs",
    env: "GATEHOUSE_DB_HEARTBEAT_MS",
    flag: "db-heartbeat-ms",
    kind: integer(100, 60_000),
    default: "1000",
    help: "PostgreSQL: heartbeat of the change feed; silent 1.5 times this, it is presumed lost",
  },
  {
    key: "oauthRateLimit",
    env: "GATEHOUSE_OAUTH_RATE_LIMIT",
    flag: "oauth-rate-limit",
    kind: integer(1, 1_000_000),
    default: "60",
    help: "requests to /oauth/authorize, and callbacks of a login in flight, per client address a minute",
  },
  {
    key: "signInRateLimit",
    env: "GATEHOUSE_SIGN_IN_RATE_LIMIT",
    flag: "sign-in-rate-limit",
    kind: integer(1, 1_000_000),
    default: "120",
    help: "sign-ins through one organization's identity provider a minute",
  },
  {
    key: "deviceCodeRateLimit",
    env: "GATEHOUSE_DEVICE_CODE_RATE_LIMIT",
    flag: "device-code-rate-limit",
    kind: integer(1, 1_000_000),
    default: "10",
    help: "user codes one client address may enter at `/oauth/device` a minute, right or wrong (against guessing)",
  },
  {
    key: "deviceCodeIntervalSeconds",
    env: "GATEHOUSE_DEVICE_CODE_INTERVAL",
    flag: "device-code-interval",
    kind: duration(1, 60),
    default: "5s",
    help: "the least time between two polls of a device code (`auth login --headless`); each poll sooner adds 5 s",
  },
  {
    key: "signInPurgeIntervalSeconds",
    env: "GATEHOUSE_SIGN_IN_PURGE_INTERVAL",
    flag: "sign-in-purge-interval",
    kind: duration(60, 365 * day),
    default: "10m",
    help: "how often spent sign-in rows and people who never finished a sign-in are purged",
  },
  {
    key: "idlePersonRetentionSeconds",
    env: "GATEHOUSE_IDLE_PERSON_RETENTION",
    flag: "idle-person-retention",
    kind: duration(day, 3650 * day),
    default: "90d",
    help: "how long a person holding nothing (no role binding, session, provider or invite) may go unseen before the sign-in purge deletes them (1d to 3650d)",
  },
  {
    key: "eventRetentionSeconds",
    env: "GATEHOUSE_EVENT_RETENTION",
    flag: "event-retention",
    kind: duration(3600, 3650 * day),
    default: "90d",
    help: "how long the audit trail keeps an event (1h to 3650d); older ones are pruned every 10 min",
  },
  {
    key: "webhookAllowHttpLoopback",
    env: "GATEHOUSE_WEBHOOK_ALLOW_HTTP_LOOPBACK",
    flag: "webhook-allow-http-loopback",
    kind: boolean,
    default: "false",
    help: "let webhook sinks be on loopback (127.0.0.1, ::1, localhost), over http too: development only",
  },
  {
    key: "webhookAllowPrivateAddresses",
    env: "GATEHOUSE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES",
    flag: "webhook-allow-private-addresses",
    kind: boolean,
    default: "false",
    help: "let webhook sinks be on private, link-local or reserved addresses (https only)",
  },
  {
    key: "webhookMaxAttempts",
    env: "GATEHOUSE_WEBHOOK_MAX_ATTEMPTS",
    flag: "webhook-max-attempts",
    kind: integer(1, 100),
    default: "12",
    help: "delivery attempts per event and subscription before it is abandoned",
  },
  {
    key: "webhookRetryBaseMs",
    env: "GATEHOUSE_WEBHOOK_RETRY_BASE_MS",
    flag: "webhook-retry-base-ms",
    kind: integer(10, 86_400_000),
    default: "10000",
    help: "wait after a delivery's first failure; doubled after each next one, with jitter",
  },
  {
    key: "webhookRetryMaxMs",
    env: "GATEHOUSE_WEBHOOK_RETRY_MAX_MS",
    flag: "webhook-retry-max-ms",
    kind: integer(10, 7 * 86_400_000),
    default: "3600000",
    help: "longest wait between two delivery attempts",
  },
  {
    key: "webhookTimeoutMs",
    env: "GATEHOUSE_WEBHOOK_TIMEOUT_MS",
    flag: "webhook-timeout-ms",
    kind: integer(100, 120_000),
    default: "10000",
    help: "longest one delivery attempt may take (connection to the end of the answer)",
  },
  {
    key: "webhookLeaseMarginMs",
    env: "GATEHOUSE_WEBHOOK_LEASE_MARGIN_MS",
    flag: "webhook-lease-margin-ms",
    kind: integer(100, 600_000),
    default: "5000",
    help: "how long past an attempt's timeout its lease keeps other servers off the delivery (time to record the outcome); a server killed mid-attempt delays it by the timeout plus this",
  },
  {
    key: "webhookConcurrency",
    env: "GATEHOUSE_WEBHOOK_CONCURRENCY",
    flag: "webhook-concurrency",
    kind: integer(1, 256),
    default: "8",
    help: "delivery attempts in flight at once, per server",
  },
  {
    key: "webhookOrganizationConcurrency",
    env: "GATEHOUSE_WEBHOOK_ORGANIZATION_CONCURRENCY",
    flag: "webhook-organization-concurrency",
    kind: integer(1, 256),
    default: "4",
    help: "delivery attempts in flight at once for one organization, across all servers",
  },
  {
    key: "webhookSubscriptionConcurrency",
    env: "GATEHOUSE_WEBHOOK_SUBSCRIPTION_CONCURRENCY",
    flag: "webhook-subscription-concurrency",
    kind: integer(1, 256),
    default: "2",
    help: "delivery attempts in flight at once for one subscription, across all servers",
  },
  {
    key: "webhookPollMs",
    env: "GATEHOUSE_WEBHOOK_POLL_MS",
    flag: "webhook-poll-ms",
    kind: integer(10, 600_000),
    default: "1000",
    help: "how often an idle server reads the webhook outbox",
  },
] as const satisfies readonly Setting[];

/** The settings table, as the CLI and the docs read it. */
export const settings: readonly Setting[] = table;

/** A setting parsed with others into one Config value (compositeSettings). */
export interface CompositeSetting {
  key: Composite;
  env: string;
  flag: string;
  default: string | { shows: string };
  help: string;
}

/**
 * The settings several of which make one Config value, parsed by their own modules: the rate
 * limits (src/rate-limit/) and v1's deprecation window (src/deprecation/). A burst's default
 * is its rate's count.
 */
export const compositeSettings: readonly CompositeSetting[] = [
  ...rateLimitSettingList.map((s) => ({
    key: "rateLimits" as const,
    ...s,
    ...(s.env.endsWith("_BURST") ? { default: { shows: "the count" } } : {}),
  })),
  ...v1SettingList.map((s) => ({ key: "v1Deprecation" as const, ...s })),
];

/** Every setting in the order `--help` and the README's table show them. */
export const documentedSettings: readonly (Setting | CompositeSetting)[] = (() => {
  const at = table.findIndex((s) => s.key === "signInRateLimit") + 1;
  return [...table.slice(0, at), ...compositeSettings, ...table.slice(at)];
})();

// The compiler names a field of Config that has no entry in the table.
const everySettingListed: Exclude<keyof Settings, (typeof table)[number]["key"]> extends never
  ? true
  : Exclude<keyof Settings, (typeof table)[number]["key"]> = true;
void everySettingListed;

/**
 * Rules between settings, checked once each has its value: `describe` names a setting as
 * messages do.
 */
const rules: ((c: Settings, describe: (key: keyof Settings) => string) => void)[] = [
  (c, describe) => {
    if (c.metricsPort !== undefined && c.metricsPort !== 0 && c.metricsPort === c.port) {
      throw new ConfigError(
        `${describe("metricsPort")}: ${c.metricsPort} is the API's port; it must differ`,
      );
    }
  },
  (c) => {
    if ((c.tlsCertPath === "") !== (c.tlsKeyPath === "")) {
      throw new ConfigError("GATEHOUSE_TLS_CERT and GATEHOUSE_TLS_KEY must be set together");
    }
  },
  (c, describe) => {
    for (const iss of c.trustedUserIssuers) {
      if (!httpsOrLoopback(iss, c.allowInsecureLoopbackIssuers)) {
        throw new ConfigError(`${describe("trustedUserIssuers")}: ${mustBeHttps(iss)}`);
      }
    }
  },
  // A domain list means nothing in another mode, and allowed-domains without one is bootstrap:
  // either is a mistake in the settings, not a choice.
  (c, describe) => {
    const listed = c.organizationCreationDomains.length > 0;
    if (c.organizationCreation === "allowed-domains" && !listed) {
      throw new ConfigError(
        `${describe("organizationCreationDomains")}: is required with allowed-domains`,
      );
    }
    if (c.organizationCreation !== "allowed-domains" && listed) {
      throw new ConfigError(
        `${describe("organizationCreationDomains")}: is used only with ` +
          `${describe("organizationCreation")}=allowed-domains`,
      );
    }
  },
  // The server-wide login provider: issuer and client ID together, https unless loopback.
  (c, describe) => {
    if (c.loginIssuer === "" && (c.loginClientId !== "" || c.loginClientSecret !== "")) {
      throw new ConfigError(
        `${describe("loginIssuer")}: is required when ${describe("loginClientId")} or ` +
          `${describe("loginClientSecret")} is set`,
      );
    }
    if (c.loginIssuer === "") return;
    if (!httpsOrLoopback(c.loginIssuer, c.allowInsecureLoopbackIssuers)) {
      throw new ConfigError(`${describe("loginIssuer")}: ${mustBeHttps(c.loginIssuer)}`);
    }
    if (c.loginClientId === "") {
      throw new ConfigError(`${describe("loginClientId")}: is required with a login issuer`);
    }
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

/**
 * Load the configuration from CLI arguments (first), environment variables, then defaults:
 * each setting parsed by its kind, then the rules between them. Throws ConfigError naming the
 * setting, what it was given and what it allows, for any bad value.
 */
export function loadConfig(argv: string[] = [], env: NodeJS.ProcessEnv = process.env): Config {
  const options = Object.fromEntries(
    [...settings, ...compositeSettings, ...removedSettings].map((s) => [
      s.flag,
      { type: "string" as const },
    ]),
  );
  let flags: Record<string, string | undefined>;
  try {
    flags = parseArgs({ args: argv, options, strict: true, allowPositionals: false })
      .values as Record<string, string | undefined>;
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const raw = (s: { env: string; flag: string }): string | undefined => flags[s.flag] ?? env[s.env];
  // Set at all, even empty (once "off"): the setting is gone, so a deployment still naming it
  // learns so now rather than when its gRPC clients cannot connect.
  for (const r of removedSettings) {
    if (raw(r) !== undefined) throw new ConfigError(`${r.env} (--${r.flag}): ${r.instead}`);
  }
  const describe = (key: keyof Settings) => {
    const s = settings.find((x) => x.key === key) as Setting;
    return `${s.env} (--${s.flag})`;
  };
  const values: Record<string, unknown> = {};
  const parse = (s: Setting, given: string) => {
    values[s.key] = (s.kind as Kind<unknown>)(given, describe(s.key));
  };
  // Plain defaults first, then the derived ones in table order: each derives from settings
  // that have their values by then.
  const derived: [Setting & { default: Derived }, string | undefined][] = [];
  for (const s of settings) {
    const given = raw(s);
    if (typeof s.default === "string") parse(s, given ?? s.default);
    else derived.push([s as Setting & { default: Derived }, given]);
  }
  for (const [s, given] of derived) {
    const blank = given === undefined || (s.default.blank && given.trim() === "");
    parse(s, blank ? s.default.from(values as unknown as Settings) : given);
  }
  const c = values as unknown as Settings;
  for (const rule of rules) rule(c, describe);
  const fail = (m: string) => new ConfigError(m);
  return {
    ...c,
    rateLimits: parseRateLimitSettings(raw, fail),
    v1Deprecation: parseV1Settings(raw, fail),
    registryService: registryHost(c.registryAudience),
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
  | "webhookLeaseMarginMs"
  | "webhookConcurrency"
  | "webhookOrganizationConcurrency"
  | "webhookSubscriptionConcurrency"
  | "webhookPollMs"
>;

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

/** Whether an issuer may be used: https, or http on loopback when that is allowed. */
function httpsOrLoopback(issuer: string, allowInsecureLoopback: boolean): boolean {
  const u = new URL(issuer);
  const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname);
  return u.protocol === "https:" || (loopback && allowInsecureLoopback);
}

/** The message for an issuer that is not https. */
function mustBeHttps(issuer: string): string {
  return (
    `${JSON.stringify(issuer)} must be an https URL ` +
    "(http only on a loopback host with GATEHOUSE_ALLOW_INSECURE_LOOPBACK_ISSUERS=true)"
  );
}

/** The `--help` text of the settings, one per line. */
export function settingsHelp(): string {
  return documentedSettings
    .map((s) => {
      const dflt = typeof s.default === "string" ? s.default : s.default.shows;
      return `  --${s.flag.padEnd(34)} ${s.env.padEnd(42)} ${s.help} [${dflt || "empty"}]`;
    })
    .join("\n");
}
