import { maxNameLength, type Violations } from "./field-rules.js";

/**
 * A repo name is an OCI repository name: one or more path components separated by `/`, each
 * `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*` (the distribution spec's rule), at most 256
 * characters in all. Slashes are allowed because registries name repos by path
 * (`library/nginx`, `team/app/api`); the repo's group, not its name, places it in the tree.
 */
const component = "[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*";
const repoNamePattern = new RegExp(`^${component}(?:/${component})*$`);
const tagNamePattern = /^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$/;
const digestPattern = /^sha256:[0-9a-f]{64}$/;

/** The most aliases a repo may have. */
export const maxRepoAliases = 32;

/** Check a repo name: required, an OCI repository name, at most 256 characters. */
export function checkRepoName(v: Violations, field: string, name: string): void {
  if (name === "") v.add(field, "is required");
  else if (name.length > maxNameLength) v.add(field, `must be at most ${maxNameLength} characters`);
  else if (!repoNamePattern.test(name)) {
    v.add(field, "must be an OCI repository name: lowercase components separated by /");
  }
}

/** Check repo aliases: each a repo name, no duplicates, at most 32. */
export function checkRepoAliases(v: Violations, field: string, aliases: readonly string[]): void {
  if (aliases.length > maxRepoAliases) {
    v.add(field, `must have at most ${maxRepoAliases} entries`);
    return;
  }
  if (new Set(aliases).size !== aliases.length) v.add(field, "must not repeat an alias");
  for (const [i, alias] of aliases.entries()) checkRepoName(v, `${field}[${i}]`, alias);
}

/** Check a tag name: `^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`. */
export function checkTagName(v: Violations, field: string, name: string): void {
  if (name === "") v.add(field, "is required");
  else if (!tagNamePattern.test(name)) {
    v.add(
      field,
      "must be 1-128 letters, digits and . _ -, the first a letter, digit or _ (an OCI tag)",
    );
  }
}

/** Check a digest: `sha256:` and 64 lowercase hex characters. */
export function checkDigest(v: Violations, field: string, digest: string): void {
  if (digest === "") v.add(field, "is required");
  else if (!digestPattern.test(digest)) v.add(field, "must be sha256: and 64 lowercase hex");
}
