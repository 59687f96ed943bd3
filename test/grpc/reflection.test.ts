import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { create, createFileRegistry, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import type { Client } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import {
  ServerReflection,
  ServerReflectionRequestSchema,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { registerReflection } from "../../src/grpc/reflection.js";
import { fakeUid, grpcJsClient, type H2cServer, reflect, startH2cServer } from "./h2c-server.js";

/** ServerReflectionResponse as proto-loader decodes it (camelCase, oneof name set). */
interface Res {
  validHost: string;
  messageResponse: string;
  fileDescriptorResponse?: { fileDescriptorProto: Buffer[] };
  listServicesResponse?: { service: { name: string }[] };
  allExtensionNumbersResponse?: { baseTypeName: string; extensionNumber: number[] };
  errorResponse?: { errorCode: number; errorMessage: string };
}

const fileNames = (r: Res | undefined) =>
  (r?.fileDescriptorResponse?.fileDescriptorProto ?? []).map(
    (b) => fromBinary(FileDescriptorProtoSchema, b).name,
  );

let srv: H2cServer;
const clients: Record<string, Client> = {};

beforeAll(async () => {
  srv = await startH2cServer();
  for (const v of ["v1", "v1alpha"]) {
    clients[v] = grpcJsClient(
      srv.port,
      `grpc/reflection/${v}/reflection.proto`,
      `grpc.reflection.${v}.ServerReflection`,
    );
  }
});

afterAll(async () => {
  for (const c of Object.values(clients)) c.close();
  await srv?.close();
});

describe.each(["v1", "v1alpha"])("reflection %s with grpc-js", (v) => {
  const ask = (...requests: object[]) => reflect<Res>(clients[v], requests);

  it("lists every registered service, itself included", async () => {
    const [res] = await ask({ host: "h", listServices: "" });
    expect(res?.validHost).toBe("h");
    expect(res?.listServicesResponse?.service.map((s) => s.name)).toEqual(
      expect.arrayContaining([
        "gatehouse.iam.v2beta1.GroupsService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
      ]),
    );
  });

  it("answers file_containing_symbol with the file and its transitive imports", async () => {
    const [res] = await ask({ fileContainingSymbol: "gatehouse.iam.v2beta1.GroupsService" });
    const names = fileNames(res);
    expect(names[0]).toBe("gatehouse/iam/v2beta1/groups.proto");
    expect(names).toEqual(
      expect.arrayContaining([
        "gatehouse/common/v2beta1/common.proto",
        "google/api/annotations.proto",
        "google/api/http.proto",
        "google/api/field_behavior.proto",
        "google/protobuf/descriptor.proto",
        "google/protobuf/timestamp.proto",
        "google/protobuf/field_mask.proto",
        "google/protobuf/empty.proto",
      ]),
    );
    // Self-contained: the files alone build a registry that knows the service.
    const files = res!.fileDescriptorResponse!.fileDescriptorProto.map((b) =>
      fromBinary(FileDescriptorProtoSchema, b),
    );
    const registry = createFileRegistry(files[0]!, (name) => files.find((f) => f.name === name));
    expect(registry.getService("gatehouse.iam.v2beta1.GroupsService")?.methods.length).toBe(5);
  });

  it.each([
    ["gatehouse.iam.v2beta1.GroupsService.GetGroup", "gatehouse/iam/v2beta1/groups.proto"],
    ["gatehouse.iam.v2beta1.Group", "gatehouse/iam/v2beta1/groups.proto"],
    ["gatehouse.iam.v2beta1.Group.ResourceLimitsEntry", "gatehouse/iam/v2beta1/groups.proto"],
    ["gatehouse.iam.v2beta1.Group.create_time", "gatehouse/iam/v2beta1/groups.proto"],
    ["gatehouse.common.v2beta1.UidpFilter", "gatehouse/common/v2beta1/common.proto"],
    ["grpc.health.v1.HealthCheckResponse.ServingStatus", "grpc/health/v1/health.proto"],
    ["grpc.health.v1.HealthCheckResponse.SERVING", "grpc/health/v1/health.proto"],
    ["google.api.http", "google/api/annotations.proto"],
    [`grpc.reflection.${v}.ServerReflection`, `grpc/reflection/${v}/reflection.proto`],
  ])("finds the file declaring %s", async (symbol, file) => {
    const [res] = await ask({ fileContainingSymbol: symbol });
    expect(fileNames(res)[0]).toBe(file);
  });

  it("answers file_by_filename", async () => {
    const [res] = await ask({ fileByFilename: "grpc/health/v1/health.proto" });
    expect(fileNames(res)).toEqual(["grpc/health/v1/health.proto"]);
  });

  it("sends an import once per stream, but a requested file always", async () => {
    const [first, second, third] = await ask(
      { fileContainingSymbol: "gatehouse.iam.v2beta1.GroupsService" },
      { fileByFilename: "google/protobuf/timestamp.proto" },
      { fileContainingSymbol: "gatehouse.iam.v2beta1.GroupsService" },
    );
    expect(fileNames(first)).toContain("google/protobuf/timestamp.proto");
    expect(fileNames(second)).toEqual(["google/protobuf/timestamp.proto"]);
    expect(fileNames(third)).toEqual(["gatehouse/iam/v2beta1/groups.proto"]);
  });

  it("finds extensions by extendee and number", async () => {
    const [ext, nums] = await ask(
      {
        fileContainingExtension: {
          containingType: "google.protobuf.MethodOptions",
          extensionNumber: 72295728,
        },
      },
      { allExtensionNumbersOfType: "google.protobuf.MethodOptions" },
    );
    expect(fileNames(ext)[0]).toBe("google/api/annotations.proto");
    expect(nums?.allExtensionNumbersResponse).toEqual({
      baseTypeName: "google.protobuf.MethodOptions",
      extensionNumber: [72295728],
    });
  });

  it.each([
    { fileContainingSymbol: "gatehouse.iam.v2beta1.NoSuchThing" },
    { fileByFilename: "no/such/file.proto" },
    {
      fileContainingExtension: {
        containingType: "gatehouse.iam.v2beta1.Group",
        extensionNumber: 9,
      },
    },
    { allExtensionNumbersOfType: "no.such.Type" },
  ])("answers NOT_FOUND in the stream for %j", async (req) => {
    const [res, after] = await ask(req, { listServices: "" });
    expect(res?.messageResponse).toBe("errorResponse");
    expect(res?.errorResponse?.errorCode).toBe(5);
    expect(after?.messageResponse).toBe("listServicesResponse");
  });
});

describe("buf curl through reflection, no local protos", () => {
  const buf = (...args: string[]) =>
    promisify(execFile)(resolve("node_modules/.bin/buf"), ["curl", ...args], { timeout: 30_000 });

  it("lists services", async () => {
    const { stdout } = await buf(
      "--http2-prior-knowledge",
      "--protocol",
      "grpc",
      "--list-services",
      srv.url,
    );
    expect(stdout.split("\n")).toEqual(
      expect.arrayContaining(["gatehouse.iam.v2beta1.GroupsService", "grpc.health.v1.Health"]),
    );
  });

  it("lists methods with the default Connect protocol for reflection too", async () => {
    // buf curl speaks --protocol (default connect) to the reflection service as well.
    const { stdout } = await buf("--list-methods", srv.url);
    expect(stdout).toContain("gatehouse.iam.v2beta1.GroupsService/GetGroup");
    expect(stdout).toContain("grpc.health.v1.Health/Watch");
  });

  it.each(["grpc-v1", "grpc-v1alpha"])(
    "calls GetGroup, schema from %s",
    async (reflectProtocol) => {
      const { stdout } = await buf(
        "--http2-prior-knowledge",
        "--protocol",
        "grpc",
        "--reflect-protocol",
        reflectProtocol,
        "-d",
        JSON.stringify({ uid: fakeUid }),
        `${srv.url}/gatehouse.iam.v2beta1.GroupsService/GetGroup`,
      );
      expect(JSON.parse(stdout)).toEqual({
        uid: fakeUid,
        name: "fake",
        createTime: "2024-01-01T00:00:00Z",
      });
    },
  );

  it("calls Health/Check", async () => {
    const { stdout } = await buf(
      "--http2-prior-knowledge",
      "--protocol",
      "grpc",
      `${srv.url}/grpc.health.v1.Health/Check`,
    );
    expect(JSON.parse(stdout)).toEqual({ status: "SERVING" });
  });
});

describe("reflection options, in memory", () => {
  it("lists the given services and describes the extra files", async () => {
    const transport = createRouterTransport((router) => {
      router.service(Health, {});
      registerReflection(router, {
        services: [GroupsService],
        files: [file_google_rpc_error_details],
      });
    });
    const client = createClient(ServerReflection, transport);
    async function* requests() {
      yield create(ServerReflectionRequestSchema, {
        messageRequest: { case: "listServices", value: "" },
      });
      yield create(ServerReflectionRequestSchema, {
        messageRequest: { case: "fileContainingSymbol", value: "google.rpc.ErrorInfo" },
      });
    }
    const answers = [];
    for await (const res of client.serverReflectionInfo(requests()))
      answers.push(res.messageResponse);
    expect(answers[0]).toEqual({
      case: "listServicesResponse",
      value: expect.objectContaining({
        service: [
          expect.objectContaining({ name: "gatehouse.iam.v2beta1.GroupsService" }),
          expect.objectContaining({ name: "grpc.reflection.v1.ServerReflection" }),
          expect.objectContaining({ name: "grpc.reflection.v1alpha.ServerReflection" }),
        ],
      }),
    });
    const bytes =
      answers[1]?.case === "fileDescriptorResponse" ? answers[1].value.fileDescriptorProto : [];
    expect(bytes.map((b) => fromBinary(FileDescriptorProtoSchema, b).name)).toEqual([
      "google/rpc/error_details.proto",
      "google/protobuf/duration.proto",
    ]);
  });
});
