import zlib from "node:zlib";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grpcErr, grpcJsGroups } from "../helpers/groups-clients.js";
import { grpcEnvelope, rawGrpc } from "../helpers/raw-grpc.js";
import { startTestServer, type TestOrg, type TestServer } from "../helpers/test-server.js";
import { grpcJsClient, reflect, unary } from "./h2c-server.js";

// GATEHOUSE_GRPC_PORT: gRPC through grpc-js's own server. The same handlers, interceptors and
// errors as the one port; grpc-js does the framing, limits and deadlines.

const MiB = 1024 * 1024;
let ts: TestServer;
let org: TestOrg;
let port: number;
const lines: string[] = [];

beforeAll(async () => {
  ts = await startTestServer(
    { GATEHOUSE_GRPC_PORT: "0", GATEHOUSE_LOG_LEVEL: "info" },
    { logStream: { write: (l) => void lines.push(l) } },
  );
  org = await ts.makeOrg("native");
  port = ts.server.grpcPort as number;
});
afterAll(() => ts?.close());

const grpcUrl = () => `http://127.0.0.1:${port}`;

describe("the grpc-js port", () => {
  it("is a port of its own", () => {
    expect(port).toBeGreaterThan(0);
    expect(port).not.toBe(ts.port);
  });

  it("refuses a call without a token with UNAUTHENTICATED and ErrorInfo", async () => {
    const api = grpcJsGroups(port);
    try {
      await expect(api.get(org.uid)).rejects.toMatchObject({
        code: grpc.status.UNAUTHENTICATED,
        reason: "UNAUTHENTICATED",
        domain: "iam.gatehouse.test",
      });
    } finally {
      api.close();
    }
  });

  it("answers PERMISSION_DENIED and INVALID_ARGUMENT with their details", async () => {
    const other = await ts.makeOrg("other");
    const api = grpcJsGroups(port, other.owner.headers);
    try {
      await expect(api.get(org.uid)).rejects.toMatchObject({
        code: grpc.status.PERMISSION_DENIED,
        reason: "PERMISSION_DENIED",
      });
      await expect(api.create(other.uid, { name: "" })).rejects.toMatchObject({
        code: grpc.status.INVALID_ARGUMENT,
        fields: ["name"],
      });
    } finally {
      api.close();
    }
  });

  it("answers an unknown method UNIMPLEMENTED", async () => {
    const a = await rawGrpc(
      grpcUrl(),
      "/gatehouse.iam.v2beta1.GroupsService/Nope",
      {},
      grpcEnvelope(Buffer.alloc(0)),
    );
    expect(a.grpcStatus).toBe(String(grpc.status.UNIMPLEMENTED));
  });

  it.each([
    ["uncompressed", false],
    ["a gzip bomb", true],
  ])("refuses a message over 1 MiB (%s) with RESOURCE_EXHAUSTED", async (_n, compressed) => {
    const body = compressed
      ? zlib.gzipSync(Buffer.alloc(64 * MiB), { level: 9 })
      : Buffer.concat([Buffer.from([0x0a, 0x80, 0x80, 0x80, 0x01]), Buffer.alloc(2 * MiB, "a")]);
    const a = await rawGrpc(
      grpcUrl(),
      "/gatehouse.iam.v2beta1.GroupsService/CreateGroup",
      { ...org.owner.headers, ...(compressed ? { "grpc-encoding": "gzip" } : {}) },
      grpcEnvelope(body, compressed),
    );
    expect(a.grpcStatus).toBe(String(grpc.status.RESOURCE_EXHAUSTED));
  });

  it("serves health Check and Watch", async () => {
    const health = grpcJsClient(port, "grpc/health/v1/health.proto", "grpc.health.v1.Health");
    try {
      expect(await unary(health, "Check", { service: "" })).toEqual({ status: "SERVING" });
      const first = await new Promise<unknown>((resolve, reject) => {
        const call = health.Watch({ service: "gatehouse.iam.v2beta1.GroupsService" });
        call.on("data", (d: unknown) => {
          resolve(d);
          call.cancel();
        });
        call.on("error", (e: grpc.ServiceError) => {
          if (e.code !== grpc.status.CANCELLED) reject(e);
        });
      });
      expect(first).toEqual({ status: "SERVING" });
    } finally {
      health.close();
    }
  });

  it("serves reflection (bidirectional streams)", async () => {
    const client = grpcJsClient(
      port,
      "grpc/reflection/v1/reflection.proto",
      "grpc.reflection.v1.ServerReflection",
    );
    try {
      const [answer] = await reflect<{ listServicesResponse: { service: { name: string }[] } }>(
        client,
        [{ listServices: "" }],
      );
      const names = answer?.listServicesResponse.service.map((s) => s.name) ?? [];
      expect(names).toContain("gatehouse.iam.v2beta1.GroupsService");
      expect(names).toContain("grpc.health.v1.Health");
    } finally {
      client.close();
    }
  });

  it("honours an expired deadline and logs every call with its code", async () => {
    const api = grpcJsGroups(port, org.owner.headers);
    try {
      expect((await api.get(org.uid)).name).toBe("native");
    } finally {
      api.close();
    }
    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logged).toContainEqual(
      expect.objectContaining({
        protocol: "grpc-native",
        method: "gatehouse.iam.v2beta1.GroupsService/GetGroup",
        code: "OK",
      }),
    );
    expect(logged).toContainEqual(
      expect.objectContaining({ protocol: "grpc-native", code: "PERMISSION_DENIED" }),
    );
    const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    try {
      const err = await new Promise<grpc.ServiceError>((resolve) => {
        client.makeUnaryRequest(
          "/gatehouse.iam.v2beta1.GroupsService/GetGroup",
          (x: Buffer) => x,
          (x: Buffer) => x,
          Buffer.alloc(0),
          new grpc.Metadata(),
          { deadline: Date.now() - 1 },
          (e) => resolve(e as grpc.ServiceError),
        );
      });
      expect(grpcErr(err).code).toBe(grpc.status.DEADLINE_EXCEEDED);
    } finally {
      client.close();
    }
  });
});
