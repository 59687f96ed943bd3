import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import Fastify from "fastify";
import { GroupSchema, GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { createHealthService } from "../../src/grpc/health.js";
import { registerReflection } from "../../src/grpc/reflection.js";

/** The uid the fake GroupsService knows. */
export const fakeUid = "0123456789abcdef0123456789abcdef01234567";

/** A fastify h2c server on 127.0.0.1 with reflection, health and a fake GroupsService. */
export interface H2cServer {
  port: number;
  url: string;
  /** Flip what the health check reports. */
  setHealthy(ok: boolean): void;
  close(): Promise<void>;
}

/** Start the server on a free port. */
export async function startH2cServer(): Promise<H2cServer> {
  let healthy = true;
  const app = Fastify({ http2: true });
  await app.register(fastifyConnectPlugin, {
    routes(router) {
      router.service(GroupsService, {
        getGroup(req) {
          if (req.uid !== fakeUid) throw new ConnectError("no such group", Code.NotFound);
          return create(GroupSchema, {
            uid: fakeUid,
            name: "fake",
            createTime: timestampFromMs(Date.UTC(2024, 0, 1)),
          });
        },
      });
      router.service(
        Health,
        createHealthService({
          check: async () => healthy,
          services: [GroupsService.typeName],
          watchIntervalMs: 20,
        }),
      );
      registerReflection(router);
    },
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = app.server.address() as AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    setHealthy: (ok) => {
      healthy = ok;
    },
    close: () => app.close(),
  };
}

const loaderOptions: protoLoader.Options = {
  includeDirs: ["proto"],
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

// biome-ignore lint/suspicious/noExplicitAny: grpc-js stubs loaded at run time are untyped.
type Stub = any;

/** A grpc-js client of a service loaded from proto/, e.g. ("grpc/health/v1/health.proto", "grpc.health.v1.Health"). */
export function grpcJsClient(port: number, protoFile: string, service: string): grpc.Client & Stub {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(protoFile, loaderOptions));
  const Ctor = service.split(".").reduce<Stub>((o, k) => o[k], pkg);
  return new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
}

/** Call a unary grpc-js method. */
export function unary<T>(client: Stub, method: string, req: object): Promise<T> {
  return new Promise((resolve, reject) => {
    client[method](req, (err: grpc.ServiceError | null, res: T) =>
      err ? reject(err) : resolve(res),
    );
  });
}

/** Send requests on one ServerReflectionInfo stream and collect the answers. */
export function reflect<T>(client: Stub, requests: object[]): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const out: T[] = [];
    const call = client.ServerReflectionInfo();
    call.on("data", (r: T) => out.push(r));
    call.on("error", reject);
    call.on("end", () => resolve(out));
    for (const r of requests) call.write(r);
    call.end();
  });
}
