import { describe, expect, it } from "vitest";
import { createFairStarts } from "../src/fair-starts.js";

/** A scheduler whose turns run when the test says, and a log of what started. */
function harness(perTurn: number, perAddress: number, bytesPerTurn = 64 * 1024) {
  let pending: (() => void)[] = [];
  const fair = createFairStarts({ perTurn, perAddress, bytesPerTurn }, (fn) => pending.push(fn));
  const started: string[] = [];
  const dones = new Map<string, (answerBytes?: number) => void>();
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

  it("starts an address's large answers a turn's worth of bytes at a time; small ones as before", () => {
    const h = harness(16, 100, 64 * 1024);
    const file = 264 * 1024;
    // The first two start at once (their size is not known yet), and say it when their heads
    // are written: the address owes 528 kB, eight turns' worth.
    h.enter("files", "f1");
    h.enter("files", "f2");
    h.dones.get("f1")!(file);
    h.dones.get("f2")!(file);
    for (let i = 3; i <= 6; i++) h.enter("files", `f${i}`);
    // Another address, with small answers, starts at once, and again.
    h.enter("api", "a1");
    h.dones.get("a1")!(300);
    h.enter("api", "a2");
    expect(h.started).toEqual(["f1", "f2", "a1", "a2"]);
    // Each turn pays 64 kB off: the files start one every four turns or so (264 kB each).
    const startedAt: number[] = [];
    for (let t = 1; t <= 60 && !h.started.includes("f6"); t++) {
      const before = h.started.length;
      h.nextTurn();
      for (const id of h.started.slice(before)) {
        startedAt.push(t);
        h.dones.get(id)!(file);
      }
      if (t === 3) {
        h.enter("api", "a3"); // still at once, while the files wait
        expect(h.started.at(-1)).toBe("a3");
        h.dones.get("a3")!(300);
      }
    }
    expect(h.started.filter((id) => id.startsWith("f"))).toEqual([
      "f1",
      "f2",
      "f3",
      "f4",
      "f5",
      "f6",
    ]);
    expect(startedAt[0]).toBeGreaterThanOrEqual(8);
    for (let i = 1; i < startedAt.length; i++) {
      expect(startedAt[i]! - startedAt[i - 1]!).toBeGreaterThanOrEqual(4);
    }
  });

  it("forgets what an idle address owed once turns paid it off", () => {
    const h = harness(16, 100, 64 * 1024);
    h.enter("a", "a1");
    h.dones.get("a1")!(256 * 1024);
    h.enter("a", "a2"); // owes four turns
    expect(h.started).toEqual(["a1"]);
    for (let t = 0; t < 4; t++) h.nextTurn();
    expect(h.started).toEqual(["a1", "a2"]);
    h.dones.get("a2")!(100);
    // Idle and paid off after a turn: gone (its next request starts at once).
    h.nextTurn();
    expect(h.fair.running("a")).toBe(0);
    h.enter("a", "a3");
    expect(h.started.at(-1)).toBe("a3");
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

  it("writes an answer's slices one a turn's worth at a time, and another address's starts meanwhile", () => {
    const h = harness(16, 100, 64 * 1024);
    const slice = 64 * 1024;
    const written: number[] = [];
    let turn = 0;
    // A 256 kB answer: its start pays the first slice, each next slice asks for its turn.
    h.enter("files", "f1");
    h.dones.get("f1")!(slice);
    let left = 3;
    const next = () => {
      written.push(turn);
      if (--left > 0) h.fair.send("files", slice, next);
    };
    h.fair.send("files", slice, next);
    expect(written).toEqual([]); // it owes the first slice: the next waits a turn
    h.enter("api", "a1"); // another address starts at once, between the slices
    expect(h.started).toEqual(["f1", "a1"]);
    for (turn = 1; turn <= 10 && written.length < 3; turn++) h.nextTurn();
    expect(written).toEqual([1, 2, 3]);
    // The address's next request waits behind what its last slice owes, as after any answer.
    h.enter("files", "f2");
    expect(h.started).toEqual(["f1", "a1"]);
    h.nextTurn();
    expect(h.started).toEqual(["f1", "a1", "f2"]);
  });

  it("writes a slice with the address's running slots all taken: it holds none", () => {
    const h = harness(16, 1, 64 * 1024);
    h.enter("a", "a1"); // running, not done: the address's one slot
    h.enter("a", "a2"); // waits for the slot
    let wrote = false;
    h.fair.send("a", 1_000, () => {
      wrote = true;
    });
    h.nextTurn();
    h.nextTurn();
    // Behind a2 in the address's queue, and a2 waits for a1: the slice waits with it...
    expect(wrote).toBe(false);
    h.dones.get("a1")!(100);
    h.nextTurn();
    h.nextTurn();
    // ...and goes once a2 has started, though a2 still holds the slot.
    expect(h.started).toEqual(["a1", "a2"]);
    expect(wrote).toBe(true);
    expect(h.fair.running("a")).toBe(1);
  });
});
