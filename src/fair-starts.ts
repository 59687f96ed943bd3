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
 */
export interface FairStarts {
  /**
   * Start a request of `address` now or at its turn: `start` receives `done`, which it must
   * call (once or more: the first call counts) when the request is finished or abandoned, with
   * its answer's size in bytes when that is known (its head says it).
   */
  enter(address: string, start: (done: (answerBytes?: number) => void) => void): void;
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

/** One address's requests: those running, those waiting their turn, and what it owes. */
interface Lane {
  address: string;
  running: number;
  queue: ((done: (answerBytes?: number) => void) => void)[];
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
  let ring: Lane[] = [];
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

  const run = (lane: Lane, start: (done: (answerBytes?: number) => void) => void) => {
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
      if (lane.queue.length > 0) enqueue(lane);
      else if (lane.running === 0) idle(lane);
    });
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
    if (!lane.queued && lane.running < limits.perAddress) {
      lane.queued = true;
      ring.push(lane);
    }
    scheduleTurn();
  };

  /**
   * A new turn: pay every lane's charges a turn's worth, start what waits, one request an
   * address a round, up to `perTurn`; lanes still owing wait for a later turn.
   */
  const turn = () => {
    turnScheduled = false;
    turns++;
    startedThisTurn = 0;
    for (const lane of idleOwing) {
      if (lane.running > 0 || lane.queue.length > 0) idleOwing.delete(lane);
      else if (settle(lane) === 0) {
        idleOwing.delete(lane);
        lanes.delete(lane.address);
      }
    }
    let startedThisRound = true;
    while (ring.length > 0 && startedThisTurn < limits.perTurn && startedThisRound) {
      startedThisRound = false;
      // Lanes served this round go behind those the round did not reach.
      const served: Lane[] = [];
      const unserved: Lane[] = [];
      for (const lane of ring) {
        if (lane.running >= limits.perAddress) {
          lane.queued = false; // at its cap: it rejoins when one of its requests is done
        } else if (startedThisTurn >= limits.perTurn || owes(lane)) {
          unserved.push(lane);
        } else {
          run(lane, lane.queue.shift()!);
          startedThisRound = true;
          if (lane.queue.length > 0 && lane.running < limits.perAddress) served.push(lane);
          else lane.queued = false;
        }
      }
      ring = [...unserved, ...served];
    }
    if (ring.length > 0 || idleOwing.size > 0) scheduleTurn();
  };

  return {
    enter(address, start) {
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
    running(address) {
      return lanes.get(address)?.running ?? 0;
    },
  };
}
