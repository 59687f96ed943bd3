/**
 * What an event says about the change it records, read from the store records the write
 * touched (the record before, read in the change's transaction, and the write's result):
 * the resource as a reviewer names it, each changed field's old and new value, and what a
 * delete removed. Written once for every resource, from the records' shapes, so a new
 * resource's events say what changed without code of their own. Never a secret's value.
 */

/** A resource as an event names it: as it was at the change. */
export interface ResourceSummary {
  uid: string;
  /** Its name (an invite's email, an advisory's id); "" for one that has none (a binding). */
  name: string;
  /** The uid of what it belongs to (its group, a tag's repo); "" for an organization. */
  parent: string;
}

/** A changed field: its old and new value, or only that it changed (a secret). */
export type FieldChange = { old: unknown; new: unknown } | { changed: true };

/**
 * Whether a field holds a secret or key material whose value an event never carries: client
 * secrets, tokens, invite codes and their hashes, passwords, keys (a static-keys identity's
 * JWKS). Matched on the field's own name, wherever it is nested.
 */
export function isSecretField(name: string): boolean {
  return /secret|token|password|hash|keys?$|^code$/i.test(name);
}

/** Fields that change with every write or are the server's own state, not the change's. */
const unreviewed = new Set(["createTime", "updateTime", "lastSeenTime", "delivery", "etag"]);

/** A value larger than this (as JSON) is named as omitted rather than copied into the event. */
const maxValueChars = 2048;

/** The record a write's result is about: itself, or the record it holds (`{ binding }`). */
export function recordOf(result: unknown): Record<string, unknown> | undefined {
  if (!isObject(result)) return undefined;
  if (typeof result.uid === "string") return result;
  for (const value of Object.values(result)) {
    if (isObject(value) && typeof value.uid === "string") return value;
  }
  return undefined;
}

/** The resource a record is, as an event names it. */
export function resourceOf(record: Record<string, unknown>): ResourceSummary {
  const text = (...keys: string[]) => {
    for (const k of keys) {
      const v = record[k];
      if (typeof v === "string" && v !== "") return v;
    }
    return "";
  };
  return {
    uid: text("uid"),
    name: text("name", "advisoryId", "email"),
    parent: text("parentUid", "groupUid", "repoUid"),
  };
}

/**
 * Each field that differs between `before` and `after`, by dotted path (`oidc.clientId`), with
 * its old and new value; a secret field only as changed. A reference to another resource
 * (`role: { uid, name, … }`) is compared by uid and shown by uid and name, as named at the
 * change; its `roleUid` twin is left out.
 */
export function changesBetween(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): Record<string, FieldChange> {
  const a = flatten(before);
  const b = flatten(after);
  const out: Record<string, FieldChange> = {};
  for (const path of new Set([...a.keys(), ...b.keys()])) {
    const old = a.get(path);
    const now = b.get(path);
    if (JSON.stringify(old) === JSON.stringify(now)) continue;
    out[path] = isSecretPath(path)
      ? { changed: true }
      : { old: bounded(old ?? null), new: bounded(now ?? null) };
  }
  return out;
}

/** What a deleted record held, field by field, secrets left out. */
export function snapshotOf(record: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [path, value] of flatten(record)) {
    if (!isSecretPath(path)) out[path] = bounded(value);
  }
  return out;
}

function isSecretPath(path: string): boolean {
  return isSecretField(path.slice(path.lastIndexOf(".") + 1));
}

/** The record's reviewable fields as leaves by dotted path; references as `{ uid, name }`. */
function flatten(record: Record<string, unknown>, prefix = ""): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const [key, value] of Object.entries(record)) {
    if (unreviewed.has(key) || value === undefined) continue;
    // `roleUid` beside `role: { uid, name }`: the reference says it, with its name.
    const twin = key.endsWith("Uid") ? record[key.slice(0, -3)] : undefined;
    if (isReference(twin)) continue;
    const path = prefix + key;
    if (isReference(value)) out.set(path, { uid: value.uid, name: value.name });
    else if (isObject(value)) for (const [p, v] of flatten(value, `${path}.`)) out.set(p, v);
    else out.set(path, value);
  }
  return out;
}

function isReference(v: unknown): v is { uid: string; name: string } {
  return isObject(v) && typeof v.uid === "string" && typeof v.name === "string";
}

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === "object" && !Array.isArray(v);
}

/** The value, or a note of its size when it is too large to copy into an event. */
function bounded(value: unknown): unknown {
  const chars = JSON.stringify(value)?.length ?? 0;
  return chars > maxValueChars ? { omitted: `${chars} characters` } : value;
}

/**
 * The read of the record an update or a delete changes, to run in its transaction before it:
 * `get<Resource>` for `update<Resource>` and `delete<Resource>` when the store has one, with
 * the write's uid (its first argument). Undefined for any other write.
 */
export function priorReadOf(name: string, has: (op: string) => boolean): string | undefined {
  const m = /^(?:update|delete)([A-Z]\w*)$/.exec(name);
  const read = m ? `get${m[1]}` : undefined;
  return read !== undefined && has(read) ? read : undefined;
}
