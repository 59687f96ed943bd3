import { describe, expect, it } from "vitest";
import { newEventId } from "../../src/events/event-id.js";

describe("event ids", () => {
  it("are UUIDs of version 7 that sort by the time they were made", () => {
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
});
