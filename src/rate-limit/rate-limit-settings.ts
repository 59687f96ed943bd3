import { durationForms, parseDurationSeconds } from "../duration.js";
import type { RatePolicy } from "./token-buckets.js";

/**
 * The rate limits an operator set (docs/api.md "Rate limits"): each class is a policy, or
 * undefined when it is off. Every limit is off by default: a personal install is never limited.
 */
export interface RateLimitSettings {
  /** Every API call, per identity (or per client address without a valid token). */
  readonly api: RatePolicy | undefined;
  /** Per organization (the root group uid): a policy of its own, or null for no limit. */
  readonly organizations: ReadonlyMap<string, RatePolicy | null>;
  /** The STS exchange (REST `/sts/exchange` and the RPC), per client address. */
  readonly sts: RatePolicy | undefined;
  /** Sign-in: the OAuth endpoints under `/oauth/`, per client address. */
  readonly login: RatePolicy | undefined;
  /** The registry token endpoint, per client address. */
  readonly registryToken: RatePolicy | undefined;
  /** SCIM provisioning (`/scim/v2/`), per client address. */
  readonly scim: RatePolicy | undefined;
}

/** One rate-limit setting: its env variable, CLI flag, default and help, as config lists them. */
export interface RateLimitSetting {
  readonly env: string;
  readonly flag: string;
  readonly default: string;
  readonly help: string;
}

const rateForm = "`<count>/<period>` (`600/1m`, `10/1s`) or `off`";

function pair(name: string, env: string, flag: string, what: string): RateLimitSetting[] {
  return [
    {
      env,
      flag,
      default: "off",
      help: `${what}: ${rateForm}`,
    },
    {
      env: `${env}_BURST`,
      flag: `${flag}-burst`,
      default: "",
      help: `the most ${name} calls let through at once (the bucket's size); default: the count of ${env}`,
    },
  ];
}

/** The settings, in the order the README's table shows them. */
export const rateLimitSettingList: readonly RateLimitSetting[] = [
  ...pair(
    "API",
    "GATEHOUSE_RATE_LIMIT",
    "rate-limit",
    "sustained rate of API calls per identity (per client address without a valid token)",
  ),
  {
    env: "GATEHOUSE_RATE_LIMIT_ORGS",
    flag: "rate-limit-orgs",
    default: "",
    help: "per-organization overrides of GATEHOUSE_RATE_LIMIT: `<org uid>=<count>/<period>[:<burst>]` or `<org uid>=off`, comma-separated",
  },
  ...pair(
    "STS exchange",
    "GATEHOUSE_STS_RATE_LIMIT",
    "sts-rate-limit",
    "sustained rate of STS exchanges per client address",
  ),
  ...pair(
    "sign-in",
    "GATEHOUSE_LOGIN_RATE_LIMIT",
    "login-rate-limit",
    "sustained rate of requests to the OAuth sign-in endpoints (`/oauth/*`) per client address",
  ),
  ...pair(
    "registry token",
    "GATEHOUSE_REGISTRY_TOKEN_RATE_LIMIT",
    "registry-token-rate-limit",
    "sustained rate of requests to the registry token endpoint per client address",
  ),
  ...pair(
    "SCIM",
    "GATEHOUSE_SCIM_RATE_LIMIT",
    "scim-rate-limit",
    "sustained rate of SCIM provisioning requests (`/scim/v2/*`) per client address",
  ),
];

/** A setting's value was refused; the message names the setting. */
export class RateLimitSettingError extends Error {
  override name = "RateLimitSettingError";
}

/**
 * Parse the rate-limit settings; `raw` reads a setting (flag first, then environment) and
 * `fail` builds the error config throws (its ConfigError), given a message naming the setting.
 */
export function parseRateLimitSettings(
  raw: (s: RateLimitSetting) => string | undefined,
  fail: (message: string) => Error = (m) => new RateLimitSettingError(m),
): RateLimitSettings {
  const byEnv = new Map(rateLimitSettingList.map((s) => [s.env, s]));
  const read = (env: string) => {
    const s = byEnv.get(env)!;
    return { value: (raw(s) ?? s.default).trim(), name: `${s.env} (--${s.flag})` };
  };
  const policy = (env: string, name: string): RatePolicy | undefined => {
    const rate = read(env);
    const burst = read(`${env}_BURST`);
    const parsed = parseRate(rate.value, name, (m) => fail(`${rate.name}: ${m}`));
    if (parsed === null) return undefined;
    if (burst.value === "") return parsed;
    return { ...parsed, burst: parseBurst(burst.value, (m) => fail(`${burst.name}: ${m}`)) };
  };
  const api = policy("GATEHOUSE_RATE_LIMIT", "api");
  const orgs = read("GATEHOUSE_RATE_LIMIT_ORGS");
  const organizations = new Map<string, RatePolicy | null>();
  for (const entry of orgs.value.split(",").map((e) => e.trim())) {
    if (entry === "") continue;
    const bad = (m: string) => fail(`${orgs.name}: ${JSON.stringify(entry)}: ${m}`);
    const eq = entry.indexOf("=");
    const uid = entry.slice(0, eq).trim();
    if (eq < 0 || !/^[0-9a-f]{1,64}$/.test(uid)) {
      throw bad(
        "expected `<org uid>=<count>/<period>[:<burst>]` (an organization's uid is its root group's)",
      );
    }
    if (organizations.has(uid)) throw bad("the organization is named twice");
    const [rate = "", burst] = entry.slice(eq + 1).split(":");
    const parsed = parseRate(rate.trim(), `org:${uid}`, bad);
    organizations.set(
      uid,
      parsed === null || burst === undefined
        ? parsed
        : { ...parsed, burst: parseBurst(burst, bad) },
    );
  }
  return {
    api,
    organizations,
    sts: policy("GATEHOUSE_STS_RATE_LIMIT", "sts"),
    login: policy("GATEHOUSE_LOGIN_RATE_LIMIT", "login"),
    registryToken: policy("GATEHOUSE_REGISTRY_TOKEN_RATE_LIMIT", "registry-token"),
    scim: policy("GATEHOUSE_SCIM_RATE_LIMIT", "scim"),
  };
}

/** `<count>/<period>` to a policy whose burst is the count; null for `off`. */
function parseRate(text: string, name: string, fail: (m: string) => Error): RatePolicy | null {
  if (/^(off|)$/i.test(text)) return null;
  const m = /^(\d{1,9})\s*\/\s*(\S+)$/.exec(text);
  const seconds = m ? parseDurationSeconds(m[2]!.replace(/^(?=[smhd]$)/, "1")) : undefined;
  const count = m ? Number(m[1]) : 0;
  if (!m || seconds === undefined || seconds < 1 || count < 1) {
    throw fail(
      `${JSON.stringify(text)} is not a rate: ${rateForm}, a count of 1 or more per a period of ${durationForms}`,
    );
  }
  return { name, count, periodMs: seconds * 1000, burst: count };
}

function parseBurst(text: string, fail: (m: string) => Error): number {
  const t = text.trim();
  if (!/^\d{1,9}$/.test(t) || Number(t) < 1) {
    throw fail(`${JSON.stringify(text)} is not a burst: a whole number of calls, 1 or more`);
  }
  return Number(t);
}
