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
 *
 * A request is started either with a `done` to call (`enter`) or with nothing attached to it
 * (`startsNow`, which the `Watcher` then follows): almost every address is far below its
 * bound, and there the scheduler only counts, looking at what it started unwatched when the
 * address reaches the bound.
 */
export interface FairStarts<T = never> {
  /**
   * Start a request of `address` now or at its turn: `start` receives `done`, which it must
   * call (once or more) when the request is finished or abandoned.
   */
  enter(address: string, start: (done: () => void) => void): void;
  /**
   * Whether `item`, a request of `address`, may start now without anything attached to it:
   * if so the caller starts it, and it counts among its address's running requests until the
   * `Watcher` says it is finished, asked only when the address reaches its bound; if not
   * (a bound is reached, or its address has requests waiting), the caller gives it to `enter`,
   * where it waits its turn. Issue 38: a closure, a wrapped method and a listener for every
   * HTTP/2 stream were the fair start's cost per call, when almost no address is near its bound.
   */
  startsNow(address: string, item: T): boolean;
  /**
   * `item`, which `startsNow` did not start, waits its turn; then, unless the `Watcher` finds
   * it finished (gone while it waited), `start` runs it, and it counts as those of `startsNow`
   * do, with nothing attached to it.
   */
  wait(address: string, item: T, start: () => void): void;
  /** Requests of `address` started and not done (for tests and the sweep). */
  running(address: string): number;
  /** Forget requests started by `startsNow` that are finished, and addresses with none left. */
  sweep(): void;
}

/** How the scheduler follows the requests `startsNow` started (HTTP/2 streams, src/one-port.ts). */
export interface Watcher<T> {
  /** Whether the request no longer holds a slot: its answer's head is written, or it is gone. */
  finished(item: T): boolean;
  /** Call `done` (once or more) when the request finishes; it has not yet. */
  watch(item: T, done: () => void): void;
}

/** The bounds of createFairStarts. */
export interface FairStartsLimits {
  /** Requests started in one turn of the event loop, over all addresses. */
  perTurn: number;
  /** Requests of one client address running at once. */
  perAddress: number;
}

/** What createFairStarts is given besides its bounds. */
export interface FairStartsOptions<T> {
  /** Follows the requests of `startsNow`; without it, `startsNow` starts nothing. */
  watcher?: Watcher<T>;
  /** Runs a function after this turn's I/O: setImmediate; tests pass their own. */
  defer?: (fn: () => void) => void;
}

/** A request waiting its turn: started with a `done` (enter), or unwatched (wait). */
type Waiting<T> = { start: (done: () => void) => void } | { item: T; begin: () => void };

/** One address's requests: those running, those waiting their turn. */
interface Lane<T> {
  address: string;
  /** Requests started with a `done` (by `enter`, or watched since), not yet done. */
  running: number;
  /** Requests started by `startsNow`, unwatched: some may have finished since. */
  loose: T[];
  queue: Waiting<T>[];
  /** Whether the lane is in the round-robin (it has a request it may start). */
  queued: boolean;
  /** Whether the lane started a request unwatched since the last turn (it is in `touched`). */
  touched: boolean;
}

/** Create the scheduler. */
export function createFairStarts<T = never>(
  limits: FairStartsLimits,
  opts: FairStartsOptions<T> = {},
): FairStarts<T> {
  const { watcher, defer = setImmediate } = opts;
  const lanes = new Map<string, Lane<T>>();
  /** Lanes with a request that may start, in round-robin order. */
  let ring: Lane<T>[] = [];
  let startedThisTurn = 0;
  let turnScheduled = false;
  /**
   * Lanes that started requests unwatched since the last turn: each turn drops those finished
   * from them. A finished stream held any longer outlives young-generation collections and is
   * promoted with everything it references (the gRPC ListGroups guard read 1.2-1.3x when
   * they were dropped only at the bound).
   */
  const touched: Lane<T>[] = [];

  const laneOf = (address: string): Lane<T> => {
    let lane = lanes.get(address);
    if (!lane) {
      lane = { address, running: 0, loose: [], queue: [], queued: false, touched: false };
      lanes.set(address, lane);
    }
    return lane;
  };

  const scheduleTurn = () => {
    if (turnScheduled) return;
    turnScheduled = true;
    defer(turn);
  };

  /** Drop the loose requests that have finished (in place: this runs at the bound). */
  const prune = (lane: Lane<T>) => {
    const loose = lane.loose;
    let kept = 0;
    for (const item of loose) if (!watcher!.finished(item)) loose[kept++] = item;
    loose.length = kept;
  };

  /**
   * Whether the lane has its bound of requests running. At the bound, its loose requests are
   * looked at: those finished are dropped, and if the bound is still reached the others are
   * watched, so that the lane hears when a slot frees (the next requests wait for that).
   */
  const full = (lane: Lane<T>): boolean => {
    if (lane.running + lane.loose.length < limits.perAddress) return false;
    if (lane.loose.length === 0) return true;
    prune(lane);
    if (lane.running + lane.loose.length < limits.perAddress) return false;
    const loose = lane.loose;
    lane.loose = [];
    for (const item of loose) {
      lane.running++;
      watcher!.watch(item, release(lane));
    }
    return true;
  };

  /** A `done` for one running request of the lane: the first call frees its slot. */
  const release = (lane: Lane<T>) => {
    let finished = false;
    return () => {
      if (finished) return;
      finished = true;
      lane.running--;
      if (lane.queue.length > 0) enqueue(lane);
      else if (lane.running === 0 && lane.loose.length === 0) lanes.delete(lane.address);
    };
  };

  /** Count `item` among the lane's running requests, started unwatched. */
  const addLoose = (lane: Lane<T>, item: T) => {
    lane.loose.push(item);
    startedThisTurn++;
    scheduleTurn();
    if (!lane.touched) {
      lane.touched = true;
      touched.push(lane);
    }
  };

  const run = (lane: Lane<T>, start: (done: () => void) => void) => {
    lane.running++;
    startedThisTurn++;
    // The next turn resets the count, and starts what waits.
    scheduleTurn();
    start(release(lane));
  };

  const enqueue = (lane: Lane<T>) => {
    if (!lane.queued && !full(lane)) {
      lane.queued = true;
      ring.push(lane);
    }
    scheduleTurn();
  };

  /** A new turn: start what waits, one request an address a round, up to `perTurn`. */
  const turn = () => {
    turnScheduled = false;
    startedThisTurn = 0;
    for (const lane of touched) {
      lane.touched = false;
      prune(lane);
      if (lane.running === 0 && lane.loose.length === 0 && lane.queue.length === 0) {
        lanes.delete(lane.address);
      }
    }
    touched.length = 0;
    while (ring.length > 0 && startedThisTurn < limits.perTurn) {
      // Lanes served this round go behind those the round did not reach.
      const served: Lane<T>[] = [];
      const unserved: Lane<T>[] = [];
      for (const lane of ring) {
        if (full(lane)) {
          lane.queued = false; // at its bound: it rejoins when one of its requests is done
        } else if (startedThisTurn >= limits.perTurn) {
          unserved.push(lane);
        } else {
          const next = lane.queue.shift()!;
          if ("start" in next) run(lane, next.start);
          else if (!watcher!.finished(next.item)) {
            addLoose(lane, next.item);
            next.begin();
          }
          if (lane.queue.length > 0 && !full(lane)) served.push(lane);
          else lane.queued = false;
        }
      }
      ring = [...unserved, ...served];
    }
    if (ring.length > 0) scheduleTurn();
  };

  return {
    enter(address, start) {
      const lane = laneOf(address);
      if (lane.queue.length === 0 && startedThisTurn < limits.perTurn && !full(lane)) {
        run(lane, start);
        return;
      }
      lane.queue.push({ start });
      enqueue(lane);
    },
    startsNow(address, item) {
      if (!watcher || startedThisTurn >= limits.perTurn) return false;
      const lane = laneOf(address);
      if (lane.queue.length > 0 || full(lane)) return false;
      addLoose(lane, item);
      return true;
    },
    wait(address, item, start) {
      const lane = laneOf(address);
      lane.queue.push({ item, begin: start });
      enqueue(lane);
    },
    running(address) {
      const lane = lanes.get(address);
      if (!lane) return 0;
      if (lane.loose.length > 0) prune(lane);
      return lane.running + lane.loose.length;
    },
    sweep() {
      for (const lane of lanes.values()) {
        if (lane.loose.length > 0) prune(lane);
        if (lane.running === 0 && lane.loose.length === 0 && lane.queue.length === 0) {
          lanes.delete(lane.address);
        }
      }
    },
  };
}
