import type { AdvisoryContent, AdvisoryEvent } from "../store/advisory-store.js";
import { advisoryLimits } from "../validation/advisory-rules.js";

/** OsvError is an OSV document that cannot become an advisory; its message is the reason. */
export class OsvError extends Error {
  override name = "OsvError";
}

const DETECTED = 1;
const FALSE_POSITIVE = 3;
const FIXED = 4;

/**
 * Map an OSV document (schema 1.x) to the content of one advisory:
 * - `id` is the advisoryId; `aliases` the aliases (repeats dropped);
 * - `summary`, or else the first non-empty line of `details`, on one line (runs of white
 *   space become one space) and cut to the summary limit;
 * - the component is the first entry of `affected`: `package.name` is componentName and
 *   `package.ecosystem` componentType (an OSV record is one advisory; the Go database lists
 *   the main module first and later entries are usually the same fix in related modules);
 * - artifactName stays empty: OSV describes packages, not built artifacts;
 * - `severity` [{type, score}] are the severities;
 * - events: DETECTED at `published`; one FIXED per distinct `fixed` version in the first
 *   affected package's ranges, with that version as fixedVersion, at the later of `published`
 *   and `modified` (OSV gives a fix no time of its own: that is the latest time the record
 *   shows it known); FALSE_POSITIVE with note "withdrawn" at `withdrawn`, when set.
 *   A time the record does not give (absent, or the Go database's 0001-01-01 "unknown") is
 *   left unset (0) rather than invented; the events then keep this order.
 * Throws OsvError when the document has no id.
 */
export function advisoryFromOsv(doc: unknown): AdvisoryContent {
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    throw new OsvError("not a JSON object");
  }
  const d = doc as Record<string, unknown>;
  if (typeof d.id !== "string" || d.id === "") throw new OsvError("id: is required");
  const published = timeOf(d.published) ?? 0;
  const fixedAt = Math.max(published, timeOf(d.modified) ?? 0);
  const detected = published;

  const affected = Array.isArray(d.affected) ? (d.affected[0] as Record<string, unknown>) : {};
  const pkg = (affected?.package ?? {}) as Record<string, unknown>;
  const events: AdvisoryEvent[] = [
    { time: detected, type: DETECTED, note: "published", fixedVersion: "" },
    ...fixedVersions(affected).map(
      (v): AdvisoryEvent => ({ time: fixedAt, type: FIXED, note: "", fixedVersion: v }),
    ),
  ];
  const withdrawn = timeOf(d.withdrawn);
  if (withdrawn !== undefined) {
    events.push({ time: withdrawn, type: FALSE_POSITIVE, note: "withdrawn", fixedVersion: "" });
  }
  return {
    advisoryId: d.id,
    aliases: [...new Set(strings(d.aliases, "aliases"))],
    summary: summaryOf(d),
    artifactName: "",
    componentName: typeof pkg.name === "string" ? pkg.name : "",
    componentType: typeof pkg.ecosystem === "string" ? pkg.ecosystem : "",
    severities: severitiesOf(d.severity),
    events,
  };
}

function timeOf(v: unknown): number | undefined {
  if (typeof v !== "string") return undefined;
  const t = Date.parse(v);
  // The Go database writes 0001-01-01 for "never modified".
  return Number.isFinite(t) && t > 0 ? t : undefined;
}

function strings(v: unknown, field: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string")) {
    throw new OsvError(`${field}: must be an array of strings`);
  }
  return v as string[];
}

function summaryOf(d: Record<string, unknown>): string {
  const summary =
    typeof d.summary === "string" && d.summary.trim() !== ""
      ? d.summary.trim()
      : typeof d.details === "string"
        ? (d.details.split("\n").find((l) => l.trim() !== "") ?? "").trim()
        : "";
  // A summary is one line: the Go database has a few that wrap.
  const oneLine = summary.replace(/\s+/g, " ");
  const max = advisoryLimits.summary;
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine;
}

function fixedVersions(affected: Record<string, unknown> | undefined): string[] {
  const out = new Set<string>();
  const ranges = Array.isArray(affected?.ranges) ? affected.ranges : [];
  for (const range of ranges as { events?: unknown }[]) {
    const events = Array.isArray(range?.events) ? range.events : [];
    for (const e of events as Record<string, unknown>[]) {
      if (typeof e?.fixed === "string" && e.fixed !== "") out.add(e.fixed);
    }
  }
  return [...out];
}

function severitiesOf(v: unknown): AdvisoryContent["severities"] {
  if (!Array.isArray(v)) return [];
  return (v as Record<string, unknown>[])
    .filter((s) => typeof s?.type === "string" && typeof s.score === "string")
    .map((s) => ({ type: s.type as string, score: s.score as string }));
}
