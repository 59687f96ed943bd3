import { randomFillSync } from "node:crypto";

/** Random bytes drawn a page at a time: one syscall for 400 ids instead of one each. */
const pool = new Uint8Array(4000);
let used = pool.length;
const hex = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/**
 * A maker of CloudEvents ids: UUIDs of version 7 (RFC 9562), the milliseconds since the epoch
 * in their first 48 bits, a counter in the next 12 (RFC 9562's "fixed bit-length dedicated
 * counter", started at random below 2,048 each millisecond) and 62 random bits after. Ids made
 * later sort after earlier ones, within a millisecond too (an event's uid is subject/id: the
 * trail of one subject lists in the order it was written, as docs/events.md tells consumers).
 * A clock that steps back, or a 4,097th id in one millisecond, takes the last id's millisecond
 * onwards. (The events table has no index on id since the step "events without an index on
 * id": the uid, subject/id, is its unique key.)
 */
export function eventIdMaker(): (now?: number) => string {
  /** The millisecond of the last id (ahead of the clock after 4,096 ids in one), its counter. */
  let lastMs = -1;
  let counter = 0;
  let prefix = "";
  return (now = Date.now()) => {
    if (used + 10 > pool.length) {
      randomFillSync(pool);
      used = 0;
    }
    const r = pool;
    const i = used;
    used += 10;
    if (now > lastMs) {
      lastMs = now;
      counter = ((r[i]! & 0x07) << 8) | r[i + 1]!;
      prefix = prefixOf(now);
    } else if (++counter > 0xfff) {
      lastMs += 1;
      counter = 0;
      prefix = prefixOf(lastMs);
    }
    return (
      // The version (7) in the high nibble, then the 12 bits of the counter.
      `${prefix}7${hex[counter >> 8]!.slice(1)}${hex[counter & 0xff]}-` +
      // The variant (binary 10) in the two high bits, then 14 random bits.
      `${hex[(r[i + 2]! & 0x3f) | 0x80]}${hex[r[i + 3]!]}-` +
      `${hex[r[i + 4]!]}${hex[r[i + 5]!]}${hex[r[i + 6]!]}${hex[r[i + 7]!]}${hex[r[i + 8]!]}${hex[r[i + 9]!]}`
    );
  };
}

/** The process's event ids (eventIdMaker). */
export const newEventId = eventIdMaker();

/** The time part, the same for every id of a millisecond: built once per millisecond. */
function prefixOf(ms: number): string {
  const t = ms.toString(16).padStart(12, "0").slice(-12);
  return `${t.slice(0, 8)}-${t.slice(8)}-`;
}
