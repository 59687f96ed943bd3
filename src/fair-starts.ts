/**
 * Fair starts: the order in which the one port starts the requests it has read, so that one
 * client address cannot take the event loop from the others (issue 36 item 3).
 *
 * Three bounds. At most `perTurn` requests start in one turn of the event loop, whoever sends
 * them; those past it wait for the next turn and are then started round-robin by address, so
 * a flood from one address takes one start in each round and a client from another address
 * waits at most about one turn, not behind the flood's queue. At most `perAddress` requests
 * of one address run at once (the caller says until when: src/one-port.ts, until the answer's
 * head is written), so that one address's slow work (a database wait) cannot take every
 * request in progress. And an address's answers take at most about `bytesPerTurn` bytes a
 * turn (deficit round-robin by bytes): each start is charged its answer's size (known when
 * its head is written; until then the address's last answer size stands in for it), each turn
 * pays `bytesPerTurn` of every address's charges off, and an address owing a turn's worth or
 * more starts nothing until it is paid down. Requests count alike and answers do not: 16 starts
 * of a 264 kB console file were 4 MB written in one turn, every other client's request behind
 * them (bench/RESULTS.md, "Fair service under hostile clients"); small answers (an API call's
 * few hundred bytes) never owe a turn's worth. A request over any bound waits; none is refused
 * (the connection limits bound how many can wait: pipelined requests a connection, streams a
 * session).
 *
 * A large answer is written a slice at a time (src/answer-slices.ts), each slice after the
 * first at its address's turn (`send`), charged like a start: one answer's write then takes a
 * slice's time of a turn, not the whole answer's (a 269 kB `writev` was a quarter of the
 * server's time under a pipelined flood, each one a wait for every other client).
 */
export interface FairStarts {
  /**
   * Start a request of `address` now or at its turn: `start` receives `done`, which it must
   * call (once or more: the first call counts) when the request is finished or abandoned, with
   * its answer's size in bytes when that is known (its head says it).
   */
  enter(address: string, start: (done: (answerBytes?: number) => void) => void): void;
  /**
   * Write the next slice of an answer of `address` already started, `bytes` long, now or at
   * the address's turn (behind what the address has waiting), charging the address those
   * bytes. A slice holds no running slot: it waits for no request of its address to finish.
   */
  send(address: string, bytes: number, write: () => void): void;
  /** Requests of `address` started and not yet done (for tests and the sweep). */
  running(address: string): number;
}

/** The bounds of createFairStarts. */
export interface FairStartsLimits {
  /** Requests started in one turn of the event loop, over all addresses. */
  perTurn: number;
  /** Requests of one client address running at once. */
  perAddress: number;
  /** Answer bytes one client address's starts may take a turn, on average. */
  bytesPerTurn: number;
}

/** A request waiting to start. */
type Start = (done: (answerBytes?: number) => void) => void;

/** A slice of an answer waiting to be written (see FairStarts.send). */
interface Slice {
  bytes: number;
  write: () => void;
}

/** One address's requests: those running, those waiting their turn, and what it owes. */
interface Lane {
  address: string;
  running: number;
  queue: (Start | Slice)[];
  /** Whether the lane is in the round-robin (it has a request it may start). */
  queued: boolean;
  /** Answer bytes charged and not yet paid off, as of turn `paidAt`. */
  owed: number;
  paidAt: number;
  /** The size of its last answer: what a start is charged until its own size is known. */
  lastAnswer: number;
}

/** Create the scheduler; `defer` is setImmediate (after this turn's I/O), tests may pass theirs. */
export function createFairStarts(
  limits: FairStartsLimits,
  defer: (fn: () => void) => void = setImmediate,
): FairStarts {
  const lanes = new Map<string, Lane>();
  /** Lanes with a request that may start, in round-robin order. */
  const ring: Lane[] = [];
  let startedThisTurn = 0;
  let turnScheduled = false;
  /** Turns so far: each pays `bytesPerTurn` of every lane's charges off. */
  let turns = 0;
  /**
   * Lanes with nothing running or waiting that still owe: kept (an address whose answers are
   * large is mostly idle between its requests' heads), and dropped once turns paid them off.
   */
  const idleOwing = new Set<Lane>();

  const scheduleTurn = () => {
    if (turnScheduled) return;
    turnScheduled = true;
    defer(turn);
  };

  /** What the lane owes once the turns since it was last paid have paid their share. */
  const settle = (lane: Lane) => {
    if (lane.owed > 0 && lane.paidAt !== turns) {
      lane.owed = Math.max(0, lane.owed - (turns - lane.paidAt) * limits.bytesPerTurn);
    }
    lane.paidAt = turns;
    return lane.owed;
  };
  /** Whether the lane owes a turn's worth of answer bytes or more: it starts nothing now. */
  const owes = (lane: Lane) => settle(lane) >= limits.bytesPerTurn;

  /** Whether the lane's next waiting item may run now as far as its running cap goes. */
  const underCap = (lane: Lane) =>
    lane.running < limits.perAddress || typeof lane.queue[0] === "object";

  /** Run what waits first in the lane: a start, or a slice. */
  const runNext = (lane: Lane) => {
    const next = lane.queue.shift()!;
    if (typeof next === "function") run(lane, next);
    else writeSlice(lane, next);
  };

  const writeSlice = (lane: Lane, slice: Slice) => {
    startedThisTurn++;
    lane.owed = settle(lane) + slice.bytes;
    scheduleTurn();
    slice.write();
  };

  const run = (lane: Lane, start: Start) => {
    lane.running++;
    startedThisTurn++;
    const guess = lane.lastAnswer;
    lane.owed += guess;
    // The next turn resets the count, and starts what waits.
    scheduleTurn();
    let finished = false;
    start((answerBytes) => {
      if (finished) return;
      finished = true;
      // Its own size for the guess (none for an abandoned request or an unknown size).
      lane.owed = Math.max(0, settle(lane) - guess + (answerBytes ?? 0));
      if (answerBytes !== undefined) lane.lastAnswer = answerBytes;
      lane.running--;
      after(lane);
    });
  };

  /** After a start is done or a slice written: the lane waits on, rests, or is dropped. */
  const after = (lane: Lane) => {
    if (lane.queue.length > 0) enqueue(lane);
    else if (lane.running === 0) idle(lane);
  };

  /**
   * A lane leaves the ring: at its cap it rejoins when one of its requests is done (enqueue);
   * with nothing running or waiting it idles.
   */
  const leave = (lane: Lane) => {
    lane.queued = false;
    if (lane.queue.length === 0 && lane.running === 0) idle(lane);
  };

  /** A lane with nothing running or waiting: dropped, or kept until what it owes is paid. */
  const idle = (lane: Lane) => {
    if (settle(lane) === 0) {
      lanes.delete(lane.address);
      return;
    }
    idleOwing.add(lane);
    scheduleTurn();
  };

  const enqueue = (lane: Lane) => {
    if (!lane.queued && underCap(lane)) {
      lane.queued = true;
      ring.push(lane);
    }
    scheduleTurn();
  };

  /** The lanes a round served, kept for the ring's end: one array for every round. */
  const served: Lane[] = [];

  /**
   * A new turn: pay every lane's charges a turn's worth, start what waits, one request an
   * address a round, up to `perTurn`; lanes still owing wait for a later turn.
   */
  const turn = () => {
    turnScheduled = false;
    turns++;
    startedThisTurn = 0;
    if (idleOwing.size > 0) {
      for (const lane of idleOwing) {
        if (lane.running > 0 || lane.queue.length > 0) idleOwing.delete(lane);
        else if (settle(lane) === 0) {
          idleOwing.delete(lane);
          lanes.delete(lane.address);
        }
      }
    }
    let startedThisRound = true;
    while (ring.length > 0 && startedThisTurn < limits.perTurn && startedThisRound) {
      startedThisRound = false;
      // Lanes served this round go behind those the round did not reach. In place, with no
      // array made a round (a turn runs for every few requests under load, and its arrays
      // were a tenth of what a pipelined flood made the server allocate, bench/RESULTS.md
      // round 8): those not reached are moved down to `kept`, those served wait in `served`.
      // A lane that a start adds to the ring meanwhile (enqueue) is at its end, and is read
      // in this same round, as it was.
      let kept = 0;
      for (let i = 0; i < ring.length; i++) {
        const lane = ring[i]!;
        if (lane.queue.length === 0 || !underCap(lane)) {
          leave(lane);
        } else if (startedThisTurn >= limits.perTurn || owes(lane)) {
          ring[kept++] = lane;
        } else {
          runNext(lane);
          startedThisRound = true;
          if (lane.queue.length > 0 && underCap(lane)) served.push(lane);
          else leave(lane);
        }
      }
      // Written over the ring's own slots: shortened only by the lanes that left (V8 trims
      // an array's store when it shrinks by half, and the pushes after it made a new one).
      for (let j = 0; j < served.length; j++) ring[kept + j] = served[j]!;
      ring.length = kept + served.length;
      served.length = 0;
    }
    if (ring.length > 0 || idleOwing.size > 0) scheduleTurn();
  };

  const laneOf = (address: string): Lane => {
    let lane = lanes.get(address);
    if (!lane) {
      lane = {
        address,
        running: 0,
        queue: [],
        queued: false,
        owed: 0,
        paidAt: turns,
        lastAnswer: 0,
      };
      lanes.set(address, lane);
    }
    return lane;
  };

  return {
    enter(address, start) {
      const lane = laneOf(address);
      if (
        lane.queue.length === 0 &&
        lane.running < limits.perAddress &&
        startedThisTurn < limits.perTurn &&
        !owes(lane)
      ) {
        run(lane, start);
        return;
      }
      lane.queue.push(start);
      enqueue(lane);
    },
    send(address, bytes, write) {
      const lane = laneOf(address);
      const slice = { bytes, write };
      if (lane.queue.length === 0 && startedThisTurn < limits.perTurn && !owes(lane)) {
        writeSlice(lane, slice);
        after(lane);
        return;
      }
      lane.queue.push(slice);
      enqueue(lane);
    },
    running(address) {
      return lanes.get(address)?.running ?? 0;
    },
  };
}
