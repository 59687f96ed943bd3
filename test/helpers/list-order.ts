import type { Timestamp } from "@bufbuild/protobuf/wkt";

// The order a List answers without `order_by` (docs/api.md "Lists"): `create_time` ascending
// (an event's `time`), ties broken by uid. A create_time is a millisecond: resources made one
// after the other within one millisecond (a fast machine's creates, or a batch's events in one
// transaction) list by uid, which is random, not in the order they were made. A test that
// expects its resources back in the order it made them expects what the API does not promise;
// it expects these orders instead.

/** What a listed resource carries: a protobuf-es message's Timestamp, or REST JSON's string. */
interface Listed {
  uid: string;
  createTime?: Timestamp | string | undefined;
  time?: Timestamp | string | undefined;
}

/** A resource's create_time (an event's time) in milliseconds since the epoch. */
function millis(x: Listed): number {
  const t = x.createTime ?? x.time;
  if (t === undefined) throw new Error(`listed without a create_time: ${x.uid}`);
  if (typeof t === "string") return Date.parse(t);
  return Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6);
}

/** `items` in the order a List answers them by default: create_time, then uid. */
export function listOrder<T extends Listed>(items: readonly T[]): T[] {
  return [...items].sort(
    (a, b) => millis(a) - millis(b) || (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0),
  );
}

/**
 * The keys `made` (in the order they were made, each the `key` of one listed item) as a List
 * answers them: in that order, but those of one millisecond by uid. Compare a List's keys with
 * it: when one of `made` is not listed, or one was given an earlier time than one made before it,
 * this is `made` itself, so the comparison fails and shows both.
 */
export function inMadeOrder<T extends Listed>(
  listed: readonly T[],
  made: readonly string[],
  key: (item: T) => string,
): string[] {
  const byKey = new Map(listed.map((x) => [key(x), x]));
  const found = made.map((k) => byKey.get(k));
  if (found.some((x) => x === undefined)) return [...made];
  const items = found as T[];
  if (items.some((x, i) => i > 0 && millis(x) < millis(items[i - 1]!))) return [...made];
  return listOrder(items).map(key);
}

/** An event's key for inMadeOrder: its type and subject (one event of each a test's calls). */
export const eventKey = (e: { type: string; subject: string }) => `${e.type} ${e.subject}`;

/**
 * `uids` in list order, each at the time `timeOf` gives it (an RFC 3339 create_time, or the
 * update that claimed something anew): the earliest first, those of one millisecond by uid.
 */
export function uidsByTime(uids: readonly string[], timeOf: ReadonlyMap<string, string>): string[] {
  return listOrder(uids.map((uid) => ({ uid, createTime: timeOf.get(uid)! }))).map((x) => x.uid);
}
