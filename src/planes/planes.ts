/**
 * Plane is one part of the server (its port, metrics, audit trail, access, health, registry,
 * console, RPC), built when it is opened. What it takes, it gives back on close.
 */
export interface Plane {
  /** Start serving (a port, a background job): by listen(), in the order the planes opened. */
  listen?(): Promise<void> | void;
  /** Stop taking work and finish what is in flight; every plane's stop runs at once. */
  stop?(): Promise<void>;
  /** Let go of what opening took, once every plane has stopped: in reverse order of opening. */
  close?(): Promise<void> | void;
}

/** Planes opens a server's planes in order, starts them, and undoes them in reverse. */
export interface Planes {
  /** Build a plane now (after those before it, whose parts it takes) and keep it for close. */
  open<P extends Plane>(name: string, build: () => P | Promise<P>): Promise<P>;
  /** Call each plane's listen, in the order they opened; the first failure stops the rest. */
  listen(): Promise<void>;
  /**
   * Stop every plane, then close each in reverse order of opening. Every plane is stopped and
   * closed even when another fails; the first failure is then thrown. Calling it again waits
   * for the same close.
   */
  close(): Promise<void>;
}

/** Where Planes tells what it does ("plane opened", "plane stopping", "plane closed"). */
export type PlaneLog = (fields: { plane: string }, msg: string) => void;

/** Make the (empty) list of a server's planes. */
export function createPlanes(log: PlaneLog): Planes {
  const opened: { name: string; plane: Plane }[] = [];
  let closing: Promise<void> | undefined;
  const undo = async () => {
    const reversed = [...opened].reverse();
    const failures: unknown[] = [];
    // Stops run together, not one after the other: each waits on its own work in flight (the
    // port's calls, the deliverer's attempts) for up to its own grace period, and one after
    // the other those periods would add up. Started in reverse order all the same.
    const stops = reversed.map(({ name, plane }) => {
      if (!plane.stop) return undefined;
      log({ plane: name }, "plane stopping");
      return plane.stop();
    });
    for (const r of await Promise.allSettled(stops)) {
      if (r.status === "rejected") failures.push(r.reason);
    }
    for (const { name, plane } of reversed) {
      try {
        await plane.close?.();
      } catch (err) {
        failures.push(err);
      }
      log({ plane: name }, "plane closed");
    }
    if (failures.length > 0) throw failures[0];
  };
  return {
    async open(name, build) {
      if (closing) throw new Error(`plane ${name}: the server is closed`);
      const plane = await build();
      opened.push({ name, plane });
      log({ plane: name }, "plane opened");
      return plane;
    },
    async listen() {
      for (const { plane } of opened) await plane.listen?.();
    },
    close() {
      closing ??= undo();
      return closing;
    },
  };
}

/**
 * PlaneSpec is one plane as a server lists it: its name, the planes whose parts it takes
 * (`needs`), and how it opens from what the server is built from (`input`) and those parts
 * alone (`from` holds the planes it names, nothing else: the compiler refuses a part it did
 * not declare).
 */
export interface PlaneSpec<Parts, In, N extends keyof Parts, D extends keyof Parts> {
  readonly name: N;
  readonly needs: readonly D[];
  open(input: In, from: Pick<Parts, D>): Parts[N] | Promise<Parts[N]>;
}

/**
 * Refuse a list of planes in which one needs a plane that does not open before it, or names
 * itself twice: the order is the list's, and every plane's parts exist when it opens.
 */
export function checkPlaneOrder(
  list: readonly { readonly name: PropertyKey; readonly needs: readonly PropertyKey[] }[],
): void {
  const before = new Set<PropertyKey>();
  for (const { name, needs } of list) {
    if (before.has(name)) throw new Error(`plane ${String(name)} is listed twice`);
    const missing = needs.filter((n) => !before.has(n));
    if (missing.length > 0) {
      throw new Error(
        `plane ${String(name)} needs ${missing.map(String).join(", ")}, which must open before it`,
      );
    }
    before.add(name);
  }
}

/**
 * Open every plane of `list` on `planes`, in the list's order (checked first: checkPlaneOrder),
 * each from `input` and the parts of the planes it needs; `opened` holds each plane's parts as
 * it opens (the planes' log may read the first ones). A plane that fails to open throws, and
 * those already open stay on `planes` for its close.
 */
export async function openPlanes<Parts extends { [K in keyof Parts]: Plane }, In>(
  planes: Planes,
  list: readonly PlaneSpec<Parts, In, keyof Parts, keyof Parts>[],
  input: In,
  opened: Partial<Parts>,
): Promise<Parts> {
  checkPlaneOrder(list);
  for (const spec of list) {
    const from = {} as Pick<Parts, keyof Parts>;
    for (const need of spec.needs) from[need] = opened[need] as Parts[keyof Parts];
    // Kept before open() logs it: the edge's "plane opened" goes to the log the edge made.
    await planes.open(String(spec.name), async () => {
      const part = await spec.open(input, from);
      opened[spec.name] = part;
      return part;
    });
  }
  return opened as Parts;
}
