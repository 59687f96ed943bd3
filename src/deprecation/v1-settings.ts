/** v1's deprecation window, as the operator set it (docs/v1-migration.md "Deprecation"). */
export interface V1DeprecationSettings {
  /** When v1 was (or will be) deprecated, in epoch milliseconds: RFC 9745's `Deprecation`. */
  readonly deprecatedAt: number;
  /** When v1 stops being served, in epoch milliseconds, if the operator set it (RFC 8594). */
  readonly sunsetAt: number | undefined;
  /** The migration guide the `Link` headers point to; "" for the one this server serves. */
  readonly migrationUrl: string;
}

/** One setting: its env variable, CLI flag, default and help, as config lists them. */
export interface V1Setting {
  readonly env: string;
  readonly flag: string;
  readonly default: string;
  readonly help: string;
}

/** The day v2 reached general availability (issue 42), and v1's deprecation began. */
export const v1DeprecationDefault = "2026-11-27";

/** The settings, in the order the README's table shows them. */
export const v1SettingList: readonly V1Setting[] = [
  {
    env: "GATEHOUSE_V1_DEPRECATION",
    flag: "v1-deprecation",
    default: v1DeprecationDefault,
    help: "when v1 was deprecated (the `Deprecation` header of every v1 answer): a date `2026-11-27` or an ISO 8601 time",
  },
  {
    env: "GATEHOUSE_V1_SUNSET",
    flag: "v1-sunset",
    default: "",
    help: "when v1 will stop being served (the `Sunset` header of every v1 answer): a date or an ISO 8601 time; empty: not announced",
  },
  {
    env: "GATEHOUSE_V1_MIGRATION_URL",
    flag: "v1-migration-url",
    default: "",
    help: "where the `Link` headers of v1 answers point; empty: the guide this server serves at `<base URL>/docs/v1-migration.md`",
  },
];

/**
 * Parse v1's deprecation settings; `raw` reads a setting (flag first, then environment),
 * `fail` builds config's error from a message naming the setting.
 */
export function parseV1Settings(
  raw: (s: V1Setting) => string | undefined,
  fail: (message: string) => Error,
): V1DeprecationSettings {
  const [deprecation, sunset, link] = v1SettingList.map((s) => ({
    value: (raw(s) ?? s.default).trim(),
    name: `${s.env} (--${s.flag})`,
  })) as [
    { value: string; name: string },
    { value: string; name: string },
    { value: string; name: string },
  ];
  const time = (s: { value: string; name: string }) => {
    const t = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2}))?$/.test(s.value)
      ? Date.parse(s.value)
      : Number.NaN;
    if (Number.isNaN(t)) {
      throw fail(
        `${s.name}: ${JSON.stringify(s.value)} is not a date (2027-06-30) or an ISO 8601 time with its zone`,
      );
    }
    return t;
  };
  const deprecatedAt = time(deprecation);
  const sunsetAt = sunset.value === "" ? undefined : time(sunset);
  // RFC 9745 section 5: a sunset before the deprecation would make no sense.
  if (sunsetAt !== undefined && sunsetAt < deprecatedAt) {
    throw fail(`${sunset.name}: must not be before ${deprecation.name}`);
  }
  if (link.value !== "" && !/^https?:\/\/[^\s<>"]+$/.test(link.value)) {
    throw fail(`${link.name}: must be an http or https URL`);
  }
  return { deprecatedAt, sunsetAt, migrationUrl: link.value };
}
