/** Options of createByteBudgetCache. */
export interface ByteBudgetCacheOptions {
  /** The most bytes all entries hold together; the least recently used go first beyond it. */
  maxBytes: number;
  /** The most entries, whatever their size. */
  maxEntries: number;
  /** The clock, in ms (tests move it). */
  now: () => number;
}

/**
 * A cache bounded by bytes, entries and time: each entry says what it holds (its bytes, which
 * may grow after it is stored) and until when it stands. An expired entry is never answered
 * and is dropped at the next use of the cache, whether or not anyone asks for it again.
 */
export interface ByteBudgetCache<V> {
  /** The entry's value if it is there and not expired; it becomes the most recently used. */
  get(key: string): V | undefined;
  /** Store `value`, holding `bytes`, until `until`; the least recently used go beyond the budget. */
  set(key: string, value: V, bytes: number, until: number): void;
  /** The entry now holds `bytes` more (a document fetched after it was stored); none: nothing. */
  grow(key: string, bytes: number): void;
  /** Change until when the entry stands, if it is there. */
  expire(key: string, until: number): void;
  /** The bytes all entries hold, after dropping the expired ones. */
  heldBytes(): number;
  /** The entries held, after dropping the expired ones. */
  size(): number;
}

/** Create a byte-, entry- and time-bounded LRU cache (ByteBudgetCache). */
export function createByteBudgetCache<V>(opts: ByteBudgetCacheOptions): ByteBudgetCache<V> {
  // Map order is use order: the first entry is the least recently used.
  const entries = new Map<string, { value: V; bytes: number; until: number }>();
  let held = 0;

  const drop = (key: string) => {
    const e = entries.get(key);
    if (!e) return;
    held -= e.bytes;
    entries.delete(key);
  };
  // A few hundred entries at most: a scan costs nothing beside the fetch that fills one.
  const sweep = () => {
    const t = opts.now();
    for (const [key, e] of entries) if (t >= e.until) drop(key);
  };
  const shrinkToBudget = () => {
    while (held > opts.maxBytes || entries.size > opts.maxEntries) {
      const oldest = entries.keys().next();
      if (oldest.done) break;
      drop(oldest.value);
    }
  };

  return {
    get(key) {
      sweep();
      const e = entries.get(key);
      if (!e) return undefined;
      entries.delete(key);
      entries.set(key, e);
      return e.value;
    },
    set(key, value, bytes, until) {
      drop(key);
      sweep();
      entries.set(key, { value, bytes, until });
      held += bytes;
      shrinkToBudget();
    },
    grow(key, bytes) {
      const e = entries.get(key);
      if (!e) return;
      e.bytes += bytes;
      held += bytes;
      shrinkToBudget();
    },
    expire(key, until) {
      const e = entries.get(key);
      if (e) e.until = until;
    },
    heldBytes() {
      sweep();
      return held;
    },
    size() {
      sweep();
      return entries.size;
    },
  };
}

/**
 * What a JSON document of `text` costs once parsed, in bytes, counted high: its characters,
 * and 32 bytes for each value, key or element (a V8 object, string or slot). A 128 KiB array
 * of one-digit numbers parses to megabytes; the count says so.
 */
export function parsedJsonBytes(text: string): number {
  let structures = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // , : [ { each start or separate a value
    if (c === 44 || c === 58 || c === 91 || c === 123) structures++;
  }
  return text.length * 2 + structures * 32;
}
