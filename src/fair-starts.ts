/**
 * Fair starts: the order in which the one port starts the requests it has read, so that one
 * client address cannot take the event loop from the others (issue 36 item 3).
 *
 * Two bounds. At most `perTurn` requests start in one turn of the event loop, whoever sends
 * them; those past it wait for the next turn and are then started round-robin by address, so
 * a flood from one address takes one start in each round and a client from another address
 * waits at most about one turn, not behind the flood's queue. And at most `perAddress`
 * requests of one address run at once (the caller says until when: src/one-port.ts, until
 * the answer's head is written), so that one address's slow work (a database wait) cannot
 * take every request in progress. A request over either bound waits; none is refused (the
 * connection limits bound how many can wait: pipelined requests a connection, streams a
 * session).
 */
export interface FairStarts {
  /**
   * Start a request of `address` now or at its turn: `start` receives `done`, which it must
   * call (once or more) when the request is finished or abandoned.
   */
  enter(address: string, start: (done: () => void) => void): void;
  /** Requests of `address` started and not yet done (for tests and the sweep). */
  running(address: string): number;
}

/** The bounds of createFairStarts. */
export interface FairStartsLimits {
  /** Requests started in one turn of the event loop, over all addresses. */
  perTurn: number;
  /** Requests of one client address running at once. */
  perAddress: number;
}

/** One address's requests: those running, those waiting their turn. */
interface Lane {
  address: string;
  running: number;
  queue: ((done: () => void) => void)[];
  /** Whether the lane is in the round-robin (it has a request it may start). */
  queued: boolean;
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

  const scheduleTurn = () => {
    if (turnScheduled) return;
    turnScheduled = true;
    defer(turn);
  };

  const run = (lane: Lane, start: (done: () => void) => void) => {
    lane.running++;
    startedThisTurn++;
    // The next turn resets the count, and starts what waits.
    scheduleTurn();
    let finished = false;
    start(() => {
      if (finished) return;
      finished = true;
      lane.running--;
      if (lane.queue.length > 0) enqueue(lane);
      else if (lane.running === 0) lanes.delete(lane.address);
    });
  };

  const enqueue = (lane: Lane) => {
    if (!lane.queued && lane.running < limits.perAddress) {
      lane.queued = true;
      ring.push(lane);
    }
    scheduleTurn();
  };

  /** A new turn: start what waits, one request an address a round, up to `perTurn`. */
  const turn = () => {
    turnScheduled = false;
    startedThisTurn = 0;
    while (ring.length > 0 && startedThisTurn < limits.perTurn) {
      // Lanes served this round go behind those the round did not reach.
      const served: Lane[] = [];
      const unserved: Lane[] = [];
      for (const lane of ring) {
        if (lane.running >= limits.perAddress) {
          lane.queued = false; // at its cap: it rejoins when one of its requests is done
        } else if (startedThisTurn >= limits.perTurn) {
          unserved.push(lane);
        } else {
          run(lane, lane.queue.shift()!);
          if (lane.queue.length > 0 && lane.running < limits.perAddress) served.push(lane);
          else lane.queued = false;
        }
      }
      ring = [...unserved, ...served];
    }
    if (ring.length > 0) scheduleTurn();
  };

  return {
    enter(address, start) {
      let lane = lanes.get(address);
      if (!lane) {
        lane = { address, running: 0, queue: [], queued: false };
        lanes.set(address, lane);
      }
      if (
        lane.queue.length === 0 &&
        lane.running < limits.perAddress &&
        startedThisTurn < limits.perTurn
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
