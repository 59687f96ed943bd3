/** How a duration may be written, for help texts and error messages. */
export const durationForms = "5d, 12h, 30m, 3600s or plain seconds";

// Seconds per unit; no unit is seconds.
const units: Record<string, number> = { "": 1, s: 1, m: 60, h: 3600, d: 86400 };

/**
 * Parse a duration written as a whole number of days, hours, minutes or seconds (`5d`, `12h`,
 * `30m`, `3600s`) or as plain seconds (`3600`), to seconds; undefined for anything else. Every
 * command-line flag and setting that takes a duration goes through this one parser.
 */
export function parseDurationSeconds(text: string): number | undefined {
  const m = /^(\d{1,9})([smhd]?)$/.exec(text.trim());
  if (!m) return undefined;
  return Number(m[1]) * (units[m[2] as string] as number);
}
