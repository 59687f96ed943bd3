import type {
  AdvisoryContent,
  AdvisoryEvent,
  AdvisorySeverity,
  EventTypeNumber,
} from "../store/advisory-store.js";
import { maxNameLength, type Violations } from "./field-rules.js";

/** Limits of advisory fields (API.md leaves them open; these hold real OSV data). */
export const advisoryLimits = {
  aliases: 64,
  summary: 1024,
  componentType: 64,
  severities: 16,
  severityText: 256,
  events: 256,
  note: 1024,
  fixedVersion: 256,
} as const;

// An id or alias such as GO-2024-0001, CVE-2024-1234, GHSA-xxxx-xxxx-xxxx, PYSEC-2024-1.
const advisoryIdPattern = /^[A-Za-z0-9][A-Za-z0-9._:+-]*$/;
// Printable: no control characters (C0, DEL, C1) and no unpaired surrogates.
const printable = /^[^\p{Cc}\p{Cs}]*$/u;

/** The API's event types by number (EVENT_TYPE_UNSPECIFIED excluded). */
export function isEventType(n: number): n is EventTypeNumber {
  return Number.isInteger(n) && n >= 1 && n <= 7;
}

/**
 * Check the fields of an advisory that are present (all of them on create, those of the
 * update mask on update), reporting every failing field under `prefix`.
 */
export function checkAdvisoryFields(v: Violations, c: Partial<AdvisoryContent>, prefix = ""): void {
  const f = (name: string) => `${prefix}${name}`;
  if (c.advisoryId !== undefined) checkAdvisoryId(v, f("advisory_id"), c.advisoryId, true);
  if (c.aliases !== undefined) {
    if (c.aliases.length > advisoryLimits.aliases) {
      v.add(f("aliases"), `must have at most ${advisoryLimits.aliases} entries`);
    } else {
      if (new Set(c.aliases).size !== c.aliases.length) v.add(f("aliases"), "must not repeat");
      for (const [i, a] of c.aliases.entries()) checkAdvisoryId(v, f(`aliases[${i}]`), a, true);
    }
  }
  if (c.summary !== undefined) checkText(v, f("summary"), c.summary, advisoryLimits.summary);
  if (c.artifactName !== undefined) {
    checkText(v, f("artifact_name"), c.artifactName, maxNameLength);
  }
  if (c.componentName !== undefined) {
    checkText(v, f("component_name"), c.componentName, maxNameLength);
  }
  if (c.componentType !== undefined) {
    checkText(v, f("component_type"), c.componentType, advisoryLimits.componentType);
  }
  if (c.severities !== undefined) checkSeverities(v, f("severities"), c.severities);
  if (c.events !== undefined) checkEvents(v, f("events"), c.events);
}

/** Check an advisory id or alias. */
export function checkAdvisoryId(v: Violations, field: string, id: string, required: boolean) {
  if (id === "") {
    if (required) v.add(field, "is required");
  } else if (id.length > maxNameLength) {
    v.add(field, `must be at most ${maxNameLength} characters`);
  } else if (!advisoryIdPattern.test(id)) {
    v.add(field, "must be letters, digits and . _ : + - (such as CVE-2024-1234)");
  }
}

/** Check a List `query`: printable, at most 256 characters. */
export function checkQuery(v: Violations, field: string, query: string): void {
  checkText(v, field, query, maxNameLength);
}

function checkText(v: Violations, field: string, s: string, max: number): void {
  if (s.length > max) v.add(field, `must be at most ${max} characters`);
  else if (!printable.test(s)) v.add(field, "must be printable characters");
}

function checkSeverities(v: Violations, field: string, list: readonly AdvisorySeverity[]) {
  if (list.length > advisoryLimits.severities) {
    v.add(field, `must have at most ${advisoryLimits.severities} entries`);
    return;
  }
  for (const [i, s] of list.entries()) {
    if (s.type === "") v.add(`${field}[${i}].type`, "is required");
    else checkText(v, `${field}[${i}].type`, s.type, advisoryLimits.componentType);
    checkText(v, `${field}[${i}].score`, s.score, advisoryLimits.severityText);
  }
}

function checkEvents(v: Violations, field: string, list: readonly AdvisoryEvent[]) {
  if (list.length > advisoryLimits.events) {
    v.add(field, `must have at most ${advisoryLimits.events} entries`);
    return;
  }
  for (const [i, e] of list.entries()) {
    if (!isEventType(e.type)) v.add(`${field}[${i}].type`, "must be a known event type");
    // 0 is an unknown time (imported records may not say when); before 1970 is a mistake.
    if (!Number.isFinite(e.time) || e.time < 0) v.add(`${field}[${i}].time`, "is not valid");
    checkText(v, `${field}[${i}].note`, e.note, advisoryLimits.note);
    checkText(v, `${field}[${i}].fixed_version`, e.fixedVersion, advisoryLimits.fixedVersion);
    if (e.fixedVersion !== "" && e.type !== 4) {
      v.add(`${field}[${i}].fixed_version`, "is allowed only on a FIXED event");
    }
  }
}
