/**
 * The reference servers of the benchmark, each run as its own child process on the pinned
 * core: `fastify <port>`, a bare fastify route returning a constant JSON, and `grpc <port>`, a
 * bare grpc-js server whose GroupsService.GetGroup answers a constant group.
 */
import * as grpc from "@grpc/grpc-js";
import Fastify from "fastify";
import { groupsServiceDefinition } from "./groups-proto.js";

const [kind, portArg] = process.argv.slice(2);
const port = Number(portArg);

if (kind === "fastify") {
  const app = Fastify({ logger: false });
  const body = { uid: "0".repeat(40), name: "constant", description: "", verified: false };
  app.get("/constant", async () => body);
  await app.listen({ host: "127.0.0.1", port });
} else if (kind === "grpc") {
  const server = new grpc.Server();
  const group = { uid: "0".repeat(40), name: "constant", description: "", verified: false };
  server.addService(groupsServiceDefinition(), {
    GetGroup: (
      _call: unknown,
      cb: (err: grpc.ServiceError | null, res: Record<string, unknown>) => void,
    ) => cb(null, group),
  });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
} else {
  throw new Error(`unknown reference server ${JSON.stringify(kind)}`);
}
process.once("SIGTERM", () => process.exit(0));
