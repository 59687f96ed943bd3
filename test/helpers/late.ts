import { afterAll, beforeAll } from "vitest";

/**
 * A stand-in for something a block's beforeAll makes (a server, a browser, an organization):
 * every property read goes to what `current()` returns once it exists, so a file can hold it in
 * a `const` at definition time and use it in hooks and tests as the thing itself. Read before
 * it exists, it throws with `what` (where it lives, and from when). `then` stays undefined, so
 * that awaiting the stand-in is not a thenable's trap; methods are bound to the real object
 * (class instances with private state, such as playwright's, need their own `this`).
 */
export function late<T extends object>(current: () => T | undefined, what: string): T {
  return new Proxy({} as T, {
    get(_target, key) {
      if (key === "then") return undefined;
      const real = current();
      if (!real) throw new Error(what);
      const value = Reflect.get(real, key);
      return typeof value === "function" ? value.bind(real) : value;
    },
  });
}

/**
 * Something a block starts in its beforeAll (`start`) and closes in its afterAll, held as
 * `late` holds it: the lifecycle of useTestServer and useInMemory, written once.
 */
export function useForBlock<T extends { close(): Promise<unknown> }>(
  start: () => Promise<T>,
  what: string,
): T {
  let current: T | undefined;
  beforeAll(async () => {
    current = await start();
  });
  afterAll(async () => {
    const closing = current;
    current = undefined;
    await closing?.close();
  });
  return late(() => current, what);
}
