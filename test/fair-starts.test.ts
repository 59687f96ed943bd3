import { describe, expect, it } from "vitest";
import { createFairStarts } from "../src/fair-starts.js";

/** A scheduler whose turns run when the test says, and a log of what started. */
function harness(perTurn: number, perAddress: number) {
  let pending: (() => void)[] = [];
  const fair = createFairStarts({ perTurn, perAddress }, { defer: (fn) => pending.push(fn) });
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

  describe("requests started with nothing attached (startsNow)", () => {
    /** Requests as HTTP/2 streams are to the one port: finished once their head is sent. */
    function unwatched(perTurn: number, perAddress: number) {
      let pending: (() => void)[] = [];
      const finished = new Set<string>();
      const watched = new Map<string, () => void>();
      const fair = createFairStarts<string>(
        { perTurn, perAddress },
        {
          defer: (fn) => pending.push(fn),
          watcher: {
            finished: (id) => finished.has(id),
            watch: (id, done) => watched.set(id, done),
          },
        },
      );
      const started: string[] = [];
      /** Start `id` as the one port starts a stream: at once if it may, else at its turn. */
      const arrive = (address: string, id: string) => {
        if (fair.startsNow(address, id)) started.push(id);
        else fair.wait(address, id, () => started.push(id));
      };
      /** The answer's head of `id` is sent. */
      const finish = (id: string) => {
        finished.add(id);
        watched.get(id)?.();
      };
      const nextTurn = () => {
        const fns = pending;
        pending = [];
        for (const fn of fns) fn();
      };
      return { fair, started, watched, arrive, finish, nextTurn };
    }

    it("watches nothing below the bound, and counts what it started", () => {
      const h = unwatched(100, 3);
      h.arrive("a", "a1");
      h.arrive("a", "a2");
      expect(h.started).toEqual(["a1", "a2"]);
      expect(h.watched.size).toBe(0);
      expect(h.fair.running("a")).toBe(2);
      h.finish("a1");
      expect(h.fair.running("a")).toBe(1);
      expect(h.watched.size).toBe(0);
    });

    it("at the bound, forgets what finished and starts without watching while there is room", () => {
      const h = unwatched(100, 2);
      h.arrive("a", "a1");
      h.arrive("a", "a2");
      h.finish("a1");
      h.arrive("a", "a3");
      expect(h.started).toEqual(["a1", "a2", "a3"]);
      expect(h.watched.size).toBe(0);
    });

    it("at the bound, watches what runs, and starts the next one when one finishes", () => {
      const h = unwatched(100, 2);
      h.arrive("a", "a1");
      h.arrive("a", "a2");
      h.arrive("a", "a3");
      h.arrive("b", "b1");
      // a1 and a2 still run: they are watched now, and a3 waits; b is another address.
      expect(h.started).toEqual(["a1", "a2", "b1"]);
      expect([...h.watched.keys()].sort()).toEqual(["a1", "a2"]);
      h.nextTurn();
      expect(h.started).toEqual(["a1", "a2", "b1"]);
      h.finish("a2");
      h.nextTurn();
      expect(h.started).toEqual(["a1", "a2", "b1", "a3"]);
      expect(h.fair.running("a")).toBe(2);
      // Behind a waiting request, a new one waits too, in order.
      h.arrive("a", "a4");
      h.finish("a1");
      h.nextTurn();
      expect(h.started.at(-1)).toBe("a4");
    });

    it("starts a waiting request bare at its turn, unless it is gone by then", () => {
      const h = unwatched(1, 100);
      h.arrive("a", "a1");
      h.arrive("a", "a2");
      h.arrive("a", "a3");
      h.finish("a2"); // its client went away while it waited
      h.nextTurn();
      expect(h.started).toEqual(["a1", "a3"]);
      expect(h.watched.size).toBe(0);
      expect(h.fair.running("a")).toBe(2);
    });

    it("counts what it starts in the turn's budget", () => {
      const h = unwatched(2, 100);
      h.arrive("a", "a1");
      h.arrive("a", "a2");
      h.arrive("b", "b1");
      expect(h.started).toEqual(["a1", "a2"]);
      h.nextTurn();
      expect(h.started).toEqual(["a1", "a2", "b1"]);
    });

    it("sweep forgets finished requests and the addresses with none left", () => {
      const h = unwatched(100, 10);
      h.arrive("a", "a1");
      h.arrive("b", "b1");
      h.finish("a1");
      h.fair.sweep();
      expect(h.fair.running("a")).toBe(0);
      expect(h.fair.running("b")).toBe(1);
    });
  });
});
