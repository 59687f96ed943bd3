import { describe, expect, it } from "vitest";
import { createFairStarts } from "../src/fair-starts.js";

/** A scheduler whose turns run when the test says, and a log of what started. */
function harness(perTurn: number, perAddress: number) {
  let pending: (() => void)[] = [];
  const fair = createFairStarts({ perTurn, perAddress }, (fn) => pending.push(fn));
  const started: string[] = [];
  const dones = new Map<string, () => void>();
  const enter = (address: string, id: string) =>
    fair.enter(address, (done) => {
      started.push(id);
      dones.set(id, done);
    });
  /** Run the turn scheduled (what setImmediate would run after this turn's I/O). */
  const nextTurn = () => {
    const fns = pending;
    pending = [];
    for (const fn of fns) fn();
  };
  return { fair, started, dones, enter, nextTurn };
}

describe("fair starts", () => {
  it("starts at once while under both bounds", () => {
    const h = harness(4, 4);
    h.enter("a", "a1");
    h.enter("b", "b1");
    expect(h.started).toEqual(["a1", "b1"]);
  });

  it("starts past the turn's budget in later turns, one an address a round", () => {
    const h = harness(3, 100);
    for (let i = 1; i <= 6; i++) h.enter("flood", `f${i}`);
    h.enter("control", "c1");
    // The flood took this turn's three starts; the control waits one turn, not behind f4-f6.
    expect(h.started).toEqual(["f1", "f2", "f3"]);
    h.nextTurn();
    expect(h.started).toEqual(["f1", "f2", "f3", "f4", "c1", "f5"]);
    h.nextTurn();
    expect(h.started.at(-1)).toBe("f6");
  });

  it("lets an address run at most its share at once, and starts the next when one is done", () => {
    const h = harness(100, 2);
    for (let i = 1; i <= 4; i++) h.enter("a", `a${i}`);
    h.enter("b", "b1");
    expect(h.started).toEqual(["a1", "a2", "b1"]);
    expect(h.fair.running("a")).toBe(2);
    h.nextTurn();
    expect(h.started).toEqual(["a1", "a2", "b1"]);
    h.dones.get("a1")!();
    h.dones.get("a1")!(); // twice counts once
    h.nextTurn();
    expect(h.started).toEqual(["a1", "a2", "b1", "a3"]);
    expect(h.fair.running("a")).toBe(2);
    h.dones.get("a2")!();
    h.dones.get("a3")!();
    h.nextTurn();
    expect(h.started.at(-1)).toBe("a4");
    expect(h.fair.running("a")).toBe(1);
    h.dones.get("a4")!();
    expect(h.fair.running("a")).toBe(0);
  });

  it("refuses nothing: every request waiting starts in the end", () => {
    const h = harness(5, 3);
    for (let i = 0; i < 50; i++) h.enter(`addr${i % 4}`, `r${i}`);
    for (let t = 0; t < 100 && h.started.length < 50; t++) {
      for (const done of h.dones.values()) done();
      h.nextTurn();
    }
    expect(new Set(h.started).size).toBe(50);
  });
});
