import { readFileSync } from "node:fs";
import net from "node:net";

/**
 * A TCP port free on 127.0.0.1 at the moment of asking, for a server whose URL must name its
 * port before it starts. Shared by the tests and the benchmarks.
 *
 * Chosen below the kernel's ephemeral range (Linux: /proc/sys/net/ipv4/ip_local_port_range,
 * 32768-60999 by default), where the kernel never puts a port of its own choosing. A port from
 * inside it (a listen on port 0) could be taken, before the server it was meant for bound it, by
 * any outgoing connection of the machine: a clean-clone CI run failed so, docker-registry
 * refused with "address already in use" a port free seconds before (registry-doc.test.ts,
 * which starts an IdP, a server and a CLI between the two). Below the range only another
 * caller's choice can collide, at random among some 20,000 ports. Elsewhere (no such file),
 * the kernel's choice, as before.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  if (low !== undefined && low > lowestPort + 1000) {
    for (let i = 0; i < 20; i++) {
      const port = lowestPort + Math.floor(Math.random() * (low - lowestPort));
      if (await bindable(port)) return port;
    }
  }
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/** The lowest port freePort picks: above the well-known and most registered services'. */
const lowestPort = 10_000;

/** The first port of the kernel's ephemeral range, where it says. */
function ephemeralLow(): number | undefined {
  try {
    const low = Number(
      readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").split(/\s+/)[0],
    );
    return Number.isInteger(low) && low > 0 ? low : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a server can listen on 127.0.0.1:`port` now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}
