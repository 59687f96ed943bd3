import { expect, it } from "vitest";
import {
  checkPlaneOrder,
  createPlanes,
  openPlanes,
  type Plane,
  type PlaneSpec,
} from "../../src/planes/planes.js";

// The composition root's lifecycle: planes open in order, start in that order, stop all at
// once (each waits on its own calls in flight) and close in reverse, even when one fails.

/** A plane that writes each step it takes into `steps`, failing where told. */
function recorder(name: string, steps: string[], fail: { stop?: boolean; close?: boolean } = {}) {
  return (): Plane => ({
    listen: () => {
      steps.push(`listen ${name}`);
    },
    stop: async () => {
      steps.push(`stop ${name}`);
      await new Promise((r) => setTimeout(r, 5));
      steps.push(`stopped ${name}`);
      if (fail.stop) throw new Error(`${name} would not stop`);
    },
    close: () => {
      steps.push(`close ${name}`);
      if (fail.close) throw new Error(`${name} would not close`);
    },
  });
}

it("starts planes in the order they opened, and closes them in reverse once all have stopped", async () => {
  const steps: string[] = [];
  const log: string[] = [];
  const planes = createPlanes((f, msg) => log.push(`${msg} ${f.plane}`));
  for (const name of ["edge", "metrics", "rpc"]) await planes.open(name, recorder(name, steps));
  await planes.listen();
  await planes.close();
  expect(steps).toEqual([
    "listen edge",
    "listen metrics",
    "listen rpc",
    // Every stop begins before any has finished: their grace periods do not add up.
    "stop rpc",
    "stop metrics",
    "stop edge",
    "stopped rpc",
    "stopped metrics",
    "stopped edge",
    "close rpc",
    "close metrics",
    "close edge",
  ]);
  expect(log.filter((l) => /opened|closed/.test(l))).toEqual([
    "plane opened edge",
    "plane opened metrics",
    "plane opened rpc",
    "plane closed rpc",
    "plane closed metrics",
    "plane closed edge",
  ]);
});

it("closes every plane when one fails to stop or close, then throws the first failure", async () => {
  const steps: string[] = [];
  const planes = createPlanes(() => undefined);
  await planes.open("edge", recorder("edge", steps));
  await planes.open("events", recorder("events", steps, { stop: true }));
  await planes.open("rpc", recorder("rpc", steps, { close: true }));
  await expect(planes.close()).rejects.toThrow("events would not stop");
  expect(steps.filter((s) => s.startsWith("close "))).toEqual([
    "close rpc",
    "close events",
    "close edge",
  ]);
});

it("closes once however often it is asked, and opens nothing after", async () => {
  const steps: string[] = [];
  const planes = createPlanes(() => undefined);
  await planes.open("edge", recorder("edge", steps));
  await Promise.all([planes.close(), planes.close()]);
  await planes.close();
  expect(steps.filter((s) => s.startsWith("close "))).toEqual(["close edge"]);
  await expect(planes.open("late", recorder("late", steps))).rejects.toThrow(/closed/);
});

it("stops at the first plane that fails to listen", async () => {
  const steps: string[] = [];
  const planes = createPlanes(() => undefined);
  await planes.open("edge", () => ({
    listen: () => Promise.reject(new Error("port busy")),
  }));
  await planes.open("events", recorder("events", steps));
  await expect(planes.listen()).rejects.toThrow("port busy");
  expect(steps).toEqual([]);
});

/** Three planes: a port, a store over it, and an API that takes both. */
interface Parts {
  port: Plane & { n: number };
  store: Plane & { n: number };
  api: Plane & { seen: string[] };
}
type Spec = PlaneSpec<Parts, string, keyof Parts, keyof Parts>;
const port: Spec = { name: "port", needs: [], open: () => ({ n: 1 }) };
const store: Spec = { name: "store", needs: ["port"], open: () => ({ n: 2 }) };
// What it was handed: the parts it named, and nothing else.
const api: Spec = {
  name: "api",
  needs: ["port", "store"],
  open: (input, from) => ({ seen: [input, ...Object.keys(from)] }),
};

it("opens a list of planes in its order, each given only the parts of the planes it needs", async () => {
  const log: string[] = [];
  const planes = createPlanes((f, msg) => log.push(`${msg} ${f.plane}`));
  const opened = await openPlanes(planes, [port, store, api], "deps", {});
  expect(opened.api.seen).toEqual(["deps", "port", "store"]);
  expect(opened.store.n).toBe(2);
  // Without `store` in its needs, the API plane is not handed the store.
  const lean = await openPlanes(
    createPlanes(() => undefined),
    [port, store, { ...api, needs: ["port"] }],
    "deps",
    {},
  );
  expect(lean.api.seen).toEqual(["deps", "port"]);
  await planes.close();
  expect(log).toEqual([
    "plane opened port",
    "plane opened store",
    "plane opened api",
    "plane closed api",
    "plane closed store",
    "plane closed port",
  ]);
});

it("refuses a list where a plane opens before one it needs, or twice, opening none of it", async () => {
  const log: string[] = [];
  const planes = createPlanes((f, msg) => log.push(`${msg} ${f.plane}`));
  await expect(openPlanes(planes, [port, api, store], "deps", {})).rejects.toThrow(
    "plane api needs store, which must open before it",
  );
  expect(() => checkPlaneOrder([port, store, port])).toThrow("plane port is listed twice");
  expect(() => checkPlaneOrder([store, port])).toThrow("plane store needs port");
  expect(log).toEqual([]);
});
