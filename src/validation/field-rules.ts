import type { FieldViolation } from "../errors.js";
import { invalidArgument } from "../errors.js";
import { isUid } from "../uid.js";

// The rules every layer checks input against (the handlers, the CLI's bootstrap, the
// importers, sign-in providers): a neutral room, importing only errors and uids.

/** Limits of API.md: names at most 256 characters, descriptions at most 512. */
export const maxNameLength = 256;
export const maxDescriptionLength = 512;

const groupNamePattern = /^[a-z0-9 ._-]{1,}$/;
// What a name shown to people may not hold, because it would hide or reorder what is shown
// beside it (issue 23): control characters (C0 with ESC, DEL, C1), unpaired surrogates,
// format characters (right-to-left overrides and isolates, zero-width spaces and joiners,
// the byte-order mark, soft hyphen) and the line and paragraph separators.
const unsafeInName = /[\p{Cc}\p{Cs}\p{Cf}\u2028\u2029]/u;
// A description may hold line breaks and tabs, but no other control character (an ESC starts
// a terminal escape sequence) and no bidirectional override, embedding or isolate.
// A carriage return only as part of CRLF: alone it sends a terminal back over the line.
const unsafeInDescription = /(?![\t\n\r])\p{Cc}|\r(?!\n)|[\p{Cs}\u202a-\u202e\u2066-\u2069]/u;

/** What a display name may hold, in words, for the violations that refuse one. */
export const displayNameRule =
  "must be printable characters: no control, format (right-to-left override, zero-width) or line separator characters";

/** Whether a display name (of a role, identity, provider, association) is safe to show. */
export function isDisplaySafe(name: string): boolean {
  return !unsafeInName.test(name);
}

/** Collects field violations so that one error reports every failing field. */
export interface Violations {
  add(field: string, description: string): void;
  /** Throw INVALID_ARGUMENT with every collected violation, if any. */
  throwIfAny(): void;
  readonly list: FieldViolation[];
}

/** Create an empty violation collector. */
export function violations(): Violations {
  const list: FieldViolation[] = [];
  return {
    list,
    add(field, description) {
      list.push({ field, description });
    },
    throwIfAny() {
      if (list.length > 0) throw invalidArgument(list);
    },
  };
}

/** What a group name may hold, in words: people read it, not the regular expression. */
export const groupNameRule = "may hold only lowercase letters a-z, digits, spaces and . _ -";

/** Check a group name: required, `^[a-z0-9 ._-]{1,}$`, at most 256 characters. */
export function checkGroupName(v: Violations, field: string, name: string): void {
  if (name === "") v.add(field, "is required");
  else if (name.length > maxNameLength) v.add(field, `must be at most ${maxNameLength} characters`);
  else if (!groupNamePattern.test(name)) v.add(field, groupNameRule);
}

/** Check a display name: required, 1-256 printable characters (see isDisplaySafe). */
export function checkDisplayName(v: Violations, field: string, name: string): void {
  if (name === "") v.add(field, "is required");
  else if (name.length > maxNameLength) v.add(field, `must be at most ${maxNameLength} characters`);
  else if (!isDisplaySafe(name)) v.add(field, displayNameRule);
}

/**
 * The name and description of an update, each checked and taken only when the mask names it:
 * the part every resource's Update shares. `checkName` is the resource's own name rule.
 */
export function labelsPatch(
  v: Violations,
  fields: ReadonlySet<string>,
  body: { name: string; description: string },
  checkName: (v: Violations, field: string, name: string) => void,
): { name?: string; description?: string } {
  const patch: { name?: string; description?: string } = {};
  if (fields.has("name")) {
    checkName(v, "name", body.name);
    patch.name = body.name;
  }
  if (fields.has("description")) {
    checkDescription(v, "description", body.description);
    patch.description = body.description;
  }
  return patch;
}

/**
 * Check a description: at most 512 characters, with no control character other than line
 * breaks and tabs (no ESC) and no bidirectional override.
 */
export function checkDescription(v: Violations, field: string, description: string): void {
  if (description.length > maxDescriptionLength) {
    v.add(field, `must be at most ${maxDescriptionLength} characters`);
  } else if (unsafeInDescription.test(description)) {
    v.add(
      field,
      "must not contain control characters other than line breaks and tabs, nor right-to-left overrides",
    );
  }
}

/** Check a uid field: required and well-formed. */
export function checkUid(v: Violations, field: string, uid: string): void {
  if (uid === "") v.add(field, "is required");
  else if (!isUid(uid)) v.add(field, "is not a valid uid");
}
