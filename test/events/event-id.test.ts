import { describe, expect, it } from "vitest";
import { eventIdMaker } from "../../src/events/event-id.js";

describe("event ids", () => {
  it("are UUIDs of version 7 that sort by the time they were made", () => {
    const newEventId = eventIdMaker();
    const t0 = Date.UTC(2026, 10, 27, 23, 0, 0);
    const ids = Array.from({ length: 2000 }, (_, i) => newEventId(t0 + Math.floor(i / 3)));
    for (const id of ids) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
    expect(new Set(ids).size).toBe(ids.length);
    // The first 48 bits are the milliseconds: an id made a millisecond later sorts after.
    expect(Number.parseInt(ids[0]!.replace("-", "").slice(0, 12), 16)).toBe(t0);
    for (let i = 3; i < ids.length; i += 3) expect(ids[i]! > ids[i - 1]!).toBe(true);
  });

  it("sort in the order they were made within a millisecond, and when the clock steps back", () => {
    const newEventId = eventIdMaker();
    const t0 = Date.UTC(2026, 10, 28, 11, 0, 0);
    // 5,000 in one millisecond: past the 4,096 its counter holds, the next millisecond's part.
    const same = Array.from({ length: 5000 }, () => newEventId(t0));
    const back = Array.from({ length: 10 }, () => newEventId(t0 - 5));
    const ids = [...same, ...back];
    for (let i = 1; i < ids.length; i += 1) expect(ids[i]! > ids[i - 1]!, `id ${i}`).toBe(true);
    expect(Number.parseInt(ids[0]!.replace("-", "").slice(0, 12), 16)).toBe(t0);
    // A later millisecond starts again from its own time.
    const later = newEventId(t0 + 1000);
    expect(Number.parseInt(later.replace("-", "").slice(0, 12), 16)).toBe(t0 + 1000);
    expect(later > ids.at(-1)!).toBe(true);
  });
});
