import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

/** The grpc-js definition of GroupsService, loaded from the repository's protos. */
export function groupsServiceDefinition(): grpc.ServiceDefinition {
  return groupsServiceClient().service;
}

/** The grpc-js client constructor of GroupsService. */
export function groupsServiceClient(): grpc.ServiceClientConstructor {
  const def = protoLoader.loadSync("gatehouse/iam/v2beta1/groups.proto", {
    includeDirs: ["proto", "node_modules/google-proto-files"],
    keepCase: false,
    longs: String,
    defaults: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    gatehouse: { iam: { v2beta1: { GroupsService: grpc.ServiceClientConstructor } } };
  };
  return pkg.gatehouse.iam.v2beta1.GroupsService;
}

/**
 * A grpc-js caller of GetGroup for `uid` on 127.0.0.1:`port`, one channel, `headers` as
 * metadata: the client the throughput figures use. `send` rejects on any failed call.
 */
export function grpcCaller(port: number, headers: Record<string, string>, uid: string) {
  const Client = groupsServiceClient();
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(headers)) md.set(k, v);
  type Unary = (
    req: unknown,
    md: grpc.Metadata,
    cb: (err: grpc.ServiceError | null) => void,
  ) => void;
  const getGroup = (client as unknown as { getGroup: Unary }).getGroup.bind(client);
  return {
    send: () =>
      new Promise<void>((resolve, reject) =>
        getGroup({ uid }, md, (err) => (err ? reject(err) : resolve())),
      ),
    close: () => client.close(),
  };
}
