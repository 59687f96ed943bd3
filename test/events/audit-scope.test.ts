import { describe, expect, it } from "vitest";
import { changeScope, eventFor, unrecordable } from "../../src/events/audit-scope.js";

// The event one audited write records, from its scope and its result (the store's write path
// calls eventFor with each change, in its transaction).

const scope = (type: string) =>
  changeScope({ type, source: "/gatehouse.iam.v1.GroupsService", actorUid: "me" });

describe("eventFor", () => {
  it("refuses a write made in a v1 adapter's own scope, outside the v2 call it adapts", () => {
    // Recorded under no type, or a v1-derived one, a subscriber of the documented types would
    // miss it: the write fails instead (and its transaction with it).
    expect(() => eventFor(scope(unrecordable), ["a/b"], { uid: "a/b" }, 1)).toThrow(
      /outside a v2 call/,
    );
  });

  it("records a put that moved an existing record as that resource's update", () => {
    const created = "dev.gatehouse.registry.tag.created.v1";
    const tag = { uid: "a/b/c" };
    expect(eventFor(scope(created), [], { tag, outcome: "created" }, 1)?.type).toBe(created);
    expect(eventFor(scope(created), [], { tag, outcome: "updated" }, 1)).toMatchObject({
      type: "dev.gatehouse.registry.tag.updated.v1",
      subject: "a/b/c",
    });
  });
});
