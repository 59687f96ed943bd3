import { durationForms, parseDurationSeconds } from "./duration.js";

/** ConfigError is a bad setting, reported at start-up with a clear message. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * Kind is how a setting's text becomes its value: `name` is how a message names the setting
 * (`GATEHOUSE_PORT (--port)`). A bad text throws ConfigError saying what was given and what
 * is allowed, except where the text may be a secret.
 */
export type Kind<T> = (text: string, name: string) => T;

/** Any text, as given. */
export const text: Kind<string> = (v) => v;

/** Text with the spaces around it removed. */
export const trimmed: Kind<string> = (v) => v.trim();

/** A whole number from `min` to `max`. */
export function integer(min: number, max: number): Kind<number> {
  return (v, name) => {
    const n = Number(v);
    if (!/^\d+$/.test(v.trim()) || n < min || n > max) {
      throw new ConfigError(
        `${name}: ${JSON.stringify(v)} is not an integer between ${min} and ${max}`,
      );
    }
    return n;
  };
}

/** A port from 0 (any free one) to 65535, or empty for none. */
export const optionalPort: Kind<number | undefined> = (v, name) =>
  v.trim() === "" ? undefined : integer(0, 65535)(v.trim(), name);

/** true, 1, yes or false, 0, no (any case); empty is false. */
export const boolean: Kind<boolean> = (v, name) => {
  if (/^(true|1|yes)$/i.test(v)) return true;
  if (/^(false|0|no|)$/i.test(v)) return false;
  throw new ConfigError(`${name}: not a boolean: ${JSON.stringify(v)} (true or false)`);
};

/** A duration (parseDurationSeconds' forms) in seconds, from `min` to `max` seconds. */
export function duration(min: number, max: number): Kind<number> {
  return (v, name) => {
    const seconds = parseDurationSeconds(v) ?? Number.NaN;
    if (!(seconds >= min && seconds <= max)) {
      const bounds = `${formatSeconds(min)} and ${formatSeconds(max)}`;
      throw new ConfigError(
        `${name}: ${JSON.stringify(v)} is not a duration between ${bounds} (${durationForms})`,
      );
    }
    return seconds;
  };
}

/** One of `values`, as written. */
export function oneOf(values: readonly string[]): Kind<string> {
  return (v, name) => {
    if (!values.includes(v)) {
      throw new ConfigError(`${name}: ${JSON.stringify(v)} is not one of ${values.join(", ")}`);
    }
    return v;
  };
}

/** An http or https URL, without its trailing slash. */
export const url: Kind<string> = (v, name) => {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new ConfigError(`${name}: not a URL: ${JSON.stringify(v)} (an http or https URL)`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new ConfigError(`${name}: ${JSON.stringify(v)} is not an http or https URL`);
  }
  return u.toString().replace(/\/$/, "");
};

/** An http or https URL kept as written: an issuer is compared as its tokens write it. */
export const issuer: Kind<string> = (v, name) => {
  url(v, name);
  return v;
};

/** A URL (as `url`) or, empty, none. */
export const optionalUrl: Kind<string> = (v, name) => (v.trim() === "" ? "" : url(v.trim(), name));

/** Comma-separated items, each checked by `item`; blanks are dropped. */
export function list(item: Kind<string>): Kind<string[]> {
  return (v, name) =>
    v
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "")
      .map((s) => item(s, name));
}

/** A web origin exactly as a browser sends it (scheme, host, optional port), or `*`. */
export const origin: Kind<string> = (v, name) => {
  if (v !== "*" && !isOrigin(v)) {
    throw new ConfigError(
      `${name}: ${JSON.stringify(v)} is not an origin (scheme://host[:port], no path) or *`,
    );
  }
  return v;
};

/** A domain name: letters, digits, dots and hyphens. */
export const domainName: Kind<string> = (v, name) => {
  if (!/^[A-Za-z0-9.-]+$/.test(v)) {
    throw new ConfigError(
      `${name}: not a domain name: ${JSON.stringify(v)} (letters, digits, dots and hyphens)`,
    );
  }
  return v;
};

/** A secret of at least `min` characters, or empty for none. Its text is never repeated. */
export function secret(min: number): Kind<string> {
  return (v, name) => {
    if (v !== "" && v.length < min) {
      throw new ConfigError(`${name}: must be at least ${min} characters (got ${v.length})`);
    }
    return v;
  };
}

/** A PostgreSQL URL as `pg` takes it, or "" (SQLite). The message never repeats a password. */
export const databaseUrl: Kind<string> = (v, name) => {
  const trimmedUrl = v.trim();
  if (trimmedUrl === "") return "";
  let u: URL | undefined;
  try {
    u = new URL(trimmedUrl);
  } catch {
    u = undefined;
  }
  if (!u || (u.protocol !== "postgres:" && u.protocol !== "postgresql:") || u.hostname === "") {
    throw new ConfigError(
      `${name}: not a PostgreSQL URL (postgres://user:password@host:5432/database)`,
    );
  }
  return trimmedUrl;
};

/**
 * A registry's service name: a host with an optional port as given, or a URL (the older
 * form of the setting); "" for none. registryHost gives the host it names.
 */
export const hostOrUrl: Kind<string> = (v, name) => {
  const given = v.trim();
  if (given === "") return "";
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(given)) {
    url(given, name); // a URL names its host: it must be an http(s) URL
    return given;
  }
  const m =
    /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?$/.exec(
      given,
    );
  if (!m || (m[1] !== undefined && Number(m[1]) > 65535)) {
    throw new ConfigError(
      `${name}: not a host (registry.example.com, 127.0.0.1:5000) or URL: ${JSON.stringify(given)}`,
    );
  }
  return given;
};

/** The host (with its port) a hostOrUrl value names. */
export function registryHost(v: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(v) ? new URL(v).host : v;
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
