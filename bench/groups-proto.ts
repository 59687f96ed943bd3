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
