/**
 * What both backends' access caches share: the keys their answers are cached under, and one
 * string per capability name for the sets they keep.
 */

/** The cache key of capabilitiesAt(identityUid, groupUids). */
export const capabilitiesKey = (identityUid: string, groupUids: readonly string[]) =>
  `${identityUid}\u0000${groupUids.join("\u0000")}`;

/** The cache key of groupsWithCapability(identityUid, capability). */
export const groupsWithKey = (identityUid: string, capability: string) =>
  `${identityUid}\u0000${capability}`;

/**
 * Intern capability names. They are a small, fixed vocabulary (the API accepts catalog names
 * only): cached sets share one string per name, so an owner's 60-odd entries cost pointers,
 * not copies. Measured on SQLite, 10,000 cached answers for an owner at depth 5: 33 MB of
 * heap before, 19 MB after. At most 10,000 names are kept, whatever a database holds.
 */
export function createInterner(): (name: string) => string {
  const names = new Map<string, string>();
  return (name) => {
    const known = names.get(name);
    if (known !== undefined) return known;
    if (names.size < 10_000) names.set(name, name);
    return name;
  };
}

/**
 * An access answer as the database gives it, kept in the caches: what the identity holds
 * through bindings that last until revoked (`lasting`), and what it holds only through
 * bindings that expire, each with the latest expiry that grants it (`timed`, ms since the
 * epoch). The answer at a moment is resolveAt's: a cached answer carries its expiries, so an
 * expired grant stops counting at once, whatever the cache holds and whether or not the
 * sweep has deleted the binding yet.
 */
export interface TimedGrants<T> {
  readonly lasting: T;
  readonly timed: ReadonlyMap<string, number>;
  /** The values of `lasting`, for resolveAt to add the unexpired timed ones to. */
  readonly values: readonly string[];
  /** How resolveAt builds an answer of `values` (a Set, a sorted frozen array). */
  readonly build: (values: Iterable<string>) => T;
}

/**
 * The timed grants of an access query's column (ops/access.ts): a value, or `<value> <expire
 * time>` for one granted by an expiring binding. `name` interns values; `build` makes the
 * answer of a list of them.
 */
export function timedGrantsOf<T>(
  found: readonly string[],
  name: (value: string) => string,
  build: (values: Iterable<string>) => T,
): TimedGrants<T> {
  const values: string[] = [];
  const timed = new Map<string, number>();
  for (const f of found) {
    const space = f.indexOf(" ");
    if (space < 0) {
      values.push(name(f));
      continue;
    }
    const value = name(f.slice(0, space));
    const until = Number(f.slice(space + 1));
    if ((timed.get(value) ?? Number.NEGATIVE_INFINITY) < until) timed.set(value, until);
  }
  for (const v of values) timed.delete(v);
  return { lasting: build(values), timed, values, build };
}

/**
 * The answer of `grants` at `now`: its lasting part, and what its timed part grants until
 * after `now`. With nothing timed (every binding lasts until revoked) the lasting answer
 * itself, the same object every time.
 */
export function resolveAt<T>(grants: TimedGrants<T>, now: number): T {
  if (grants.timed.size === 0) return grants.lasting;
  const out = [...grants.values];
  for (const [value, until] of grants.timed) if (until > now) out.push(value);
  return grants.build(out);
}

/** How often an access cache answered from memory (hits) or asked the database (misses). */
export interface CacheCounts {
  hits: number;
  misses: number;
}

/** The bytes one access answer's cache entry is counted as: its key and what it holds. */
export function answerBytes(key: string, answer: unknown): number {
  // A Map entry and a one-byte string header; the answers themselves below.
  let bytes = 48 + key.length;
  if (answer && typeof answer === "object" && "timed" in answer) {
    // A timed answer (TimedGrants): its lasting values, and each timed one with its expiry.
    const t = answer as TimedGrants<unknown>;
    bytes += answerBytes("", t.lasting) + 64 + t.values.length * 8;
    for (const v of t.timed.keys()) bytes += 48 + v.length;
    return bytes;
  }
  if (answer instanceof Set) {
    // Interned names: a pointer and a hash table slot each.
    bytes += 64 + answer.size * 24;
  } else if (Array.isArray(answer)) {
    // Group uids, one string of their own each.
    bytes += 32;
    for (const item of answer) bytes += 8 + (typeof item === "string" ? 24 + item.length : 16);
  }
  return bytes;
}

/**
 * The answers of an access cache, bounded by the bytes they hold (answerBytes) as well as by
 * their number: the oldest go first beyond either. By entries alone, 10,000 answers could be
 * 10,000 booleans or 10,000 lists of an identity's groups; an access cache's worst case is
 * what counts against the server's memory, so it is capped by what it holds.
 */
export interface AnswerMap {
  has(key: string): boolean;
  get(key: string): unknown;
  set(key: string, answer: unknown): void;
  clear(): void;
  /** The bytes the answers held are counted as. */
  readonly heldBytes: number;
}

/** Create an AnswerMap of at most `maxBytes` and `maxEntries`. */
export function createAnswerMap(maxBytes: number, maxEntries: number): AnswerMap {
  const answers = new Map<string, unknown>();
  // Kept apart from the answers, so that a hit reads one map as before.
  const sizes = new Map<string, number>();
  let held = 0;
  return {
    has: (key) => answers.has(key),
    get: (key) => answers.get(key),
    set(key, answer) {
      const bytes = answerBytes(key, answer);
      if (bytes > maxBytes) return;
      if (answers.has(key)) {
        held -= sizes.get(key) ?? 0;
        answers.delete(key);
        sizes.delete(key);
      }
      while (answers.size > 0 && (held + bytes > maxBytes || answers.size >= maxEntries)) {
        const oldest = answers.keys().next().value!;
        held -= sizes.get(oldest) ?? 0;
        answers.delete(oldest);
        sizes.delete(oldest);
      }
      answers.set(key, answer);
      sizes.set(key, bytes);
      held += bytes;
    },
    clear() {
      answers.clear();
      sizes.clear();
      held = 0;
    },
    get heldBytes() {
      return held;
    },
  };
}

/** What an access cache may hold by default: 8 MB of answers, 10,000 at most. */
export const accessCacheBudget = { maxBytes: 8 * 1024 * 1024, maxEntries: 10_000 };
