/**
 * The reference servers of the benchmark, each run as its own child process on the pinned
 * core: `fastify <port>`, a bare fastify route returning a constant JSON; `grpc <port>
 * [group]`, a bare grpc-js server whose GroupsService.GetGroup answers a constant group (the
 * one given, in base64 of its binary encoding: the group Gatehouse answers, decoded once
 * here and encoded again per call, as any grpc-js server does; the loader writes its default
 * fields, so the wire carries a few bytes more than Gatehouse's 59); and
 * `connect <port>`, the same constant GetGroup on a bare connect-node HTTP/2 (h2c) server:
 * the floor that the library Gatehouse serves gRPC and Connect with sets, for comparison.
 */
import http2 from "node:http2";
import { create } from "@bufbuild/protobuf";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import Fastify from "fastify";
import { GroupSchema, GroupsService } from "../gen/gatehouse/iam/v2beta1/groups_pb.js";
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
  const definition = groupsServiceDefinition();
  const given = process.argv[4];
  const group = given
    ? (definition.GetGroup!.responseDeserialize(Buffer.from(given, "base64")) as Record<
        string,
        unknown
      >)
    : { uid: "0".repeat(40), name: "constant", description: "", verified: false };
  server.addService(definition, {
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
} else if (kind === "connect") {
  const group = create(GroupSchema, { uid: "0".repeat(40), name: "constant" });
  const handler = connectNodeAdapter({
    routes: (router) => router.service(GroupsService, { getGroup: () => group }),
  });
  await new Promise<void>((resolve) =>
    http2.createServer(handler).listen(port, "127.0.0.1", resolve),
  );
} else {
  throw new Error(`unknown reference server ${JSON.stringify(kind)}`);
}
process.once("SIGTERM", () => process.exit(0));
