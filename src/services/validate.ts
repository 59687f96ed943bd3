import type { FieldViolation } from "../errors.js";
import { invalidArgument } from "../errors.js";
import { isUid } from "../uid.js";

/** Limits of API.md: names at most 256 characters, descriptions at most 512. */
export const maxNameLength = 256;
export const maxDescriptionLength = 512;

const groupNamePattern = /^[a-z0-9 ._-]{1,}$/;
// Printable: no control characters (C0, DEL, C1) and no unpaired surrogates.
const printablePattern = /^[^\p{Cc}\p{Cs}]+$/u;

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

/** Check a display name: required, 1-256 printable characters. */
export function checkDisplayName(v: Violations, field: string, name: string): void {
  if (name === "") v.add(field, "is required");
  else if (name.length > maxNameLength) v.add(field, `must be at most ${maxNameLength} characters`);
  else if (!printablePattern.test(name)) v.add(field, "must be printable characters");
}

/** Check a description: at most 512 characters. */
export function checkDescription(v: Violations, field: string, description: string): void {
  if (description.length > maxDescriptionLength) {
    v.add(field, `must be at most ${maxDescriptionLength} characters`);
  }
}

/** Check a uid field: required and well-formed. */
export function checkUid(v: Violations, field: string, uid: string): void {
  if (uid === "") v.add(field, "is required");
  else if (!isUid(uid)) v.add(field, "is not a valid uid");
}
