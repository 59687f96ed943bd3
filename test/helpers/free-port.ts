import net from "node:net";

/**
 * A TCP port free on 127.0.0.1 at the moment of asking, for a server whose URL must name its
 * port before it starts. Shared by the tests and the benchmarks.
 */
export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}
