import { afterEach, expect, it } from "vitest";
import { storeRoles } from "../../src/auth/capabilities.js";
import { loadConfig } from "../../src/config.js";
import { checkPlaneOrder } from "../../src/planes/planes.js";
import { serverPlanes } from "../../src/planes/server-planes.js";
import { createServer } from "../../src/server.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { startTestServer } from "../helpers/test-server.js";

// createServer's planes, as its debug log tells them: opened in the order each takes the
// parts of those before it, closed in reverse; a start that fails closes what had opened.

const stores: Store[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

/** A log stream keeping the planes' lines, in order, as "<msg> <plane>". */
function planeLog() {
  const lines: string[] = [];
  return {
    lines,
    stream: {
      write(line: string) {
        const { msg, plane } = JSON.parse(line) as { msg: string; plane?: string };
        if (plane !== undefined) lines.push(`${msg} ${plane}`);
      },
    },
  };
}

const order = [
  "edge",
  "metrics",
  "events",
  "limits",
  "expiry",
  "health",
  "auth",
  "registry",
  "scim",
  "console",
  "rpc",
];

it("opens its planes in order and closes them in the reverse order", async () => {
  expect(serverPlanes.map((p) => p.name)).toEqual(order);
  const log = planeLog();
  const server = await startTestServer(
    { GATEHOUSE_LOG_LEVEL: "debug", GATEHOUSE_METRICS_PORT: "0" },
    { logStream: log.stream },
  );
  // Serving, with the metrics port up as well.
  expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  expect(server.server.metricsPort).toBeGreaterThan(0);
  await server.close();
  const opened = log.lines.filter((l) => l.startsWith("plane opened")).map((l) => l.slice(13));
  const closed = log.lines.filter((l) => l.startsWith("plane closed")).map((l) => l.slice(13));
  expect(opened).toEqual(order);
  expect(closed).toEqual([...order].reverse());
  // Each plane that has work in flight stops before any plane closes.
  const firstClose = log.lines.findIndex((l) => l.startsWith("plane closed"));
  const lastStop = log.lines.findLastIndex((l) => l.startsWith("plane stopping"));
  expect(lastStop).toBeGreaterThanOrEqual(0);
  expect(lastStop).toBeLessThan(firstClose);
});

it("fails closed when a plane cannot open, closing those that had opened, in reverse", async () => {
  const log = planeLog();
  const store = createSqliteStore(":memory:", { roles: storeRoles });
  stores.push(store);
  // The RPC plane's page-token key cannot be read: the store fails under it.
  const failing = new Proxy(store, {
    get(target, key, receiver) {
      if (key === "getOrCreateSecret") {
        return (name: string, make: () => Buffer) =>
          name === "page-token-key"
            ? Promise.reject(new Error("disk I/O error"))
            : target.getOrCreateSecret(name, make);
      }
      return Reflect.get(target, key, receiver);
    },
  });
  const config = loadConfig([], {
    GATEHOUSE_HOST: "127.0.0.1",
    GATEHOUSE_PORT: "0",
    GATEHOUSE_DB: ":memory:",
    GATEHOUSE_LOG_LEVEL: "debug",
  });
  await expect(createServer({ config, store: failing, logStream: log.stream })).rejects.toThrow(
    "disk I/O error",
  );
  const opened = order.slice(0, order.indexOf("rpc"));
  expect(log.lines.filter((l) => l.startsWith("plane opened")).map((l) => l.slice(13))).toEqual(
    opened,
  );
  expect(log.lines.filter((l) => l.startsWith("plane closed")).map((l) => l.slice(13))).toEqual(
    [...opened].reverse(),
  );
});

it("lists the server's planes so that each opens after every plane it needs", () => {
  expect(() => checkPlaneOrder(serverPlanes)).not.toThrow();
  // Moving any plane above one it needs is refused: the order is the list's, and checked.
  for (const [i, p] of serverPlanes.entries()) {
    for (const need of p.needs) {
      const at = serverPlanes.findIndex((q) => q.name === need);
      const moved = [...serverPlanes];
      moved.splice(i, 1);
      moved.splice(at, 0, p);
      expect(() => checkPlaneOrder(moved)).toThrow(`plane ${p.name} needs`);
    }
  }
});
