import * as grpc from "@grpc/grpc-js";
import { beforeAll, describe, expect, it } from "vitest";
import { grpcErr, grpcJsGroups } from "../helpers/groups-clients.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// gRPC with grpc-js clients on the one port: errors with their details, metadata, deadlines and
// the request log. These were asserted on the separate grpc-js port until it was removed (issue
// 25): the one port serves gRPC, so they are asserted here. Health, reflection, message limits
// and unknown methods over gRPC have their own files (health, reflection, message-limits,
// protocol-edges).

let org: TestOrg;
const lines: string[] = [];

const ts = useTestServer(
  { GATEHOUSE_LOG_LEVEL: "info" },
  { logStream: { write: (l) => void lines.push(l) } },
);
beforeAll(async () => {
  org = await ts.makeOrg("grpc-js");
});

const getGroup = "/gatehouse.iam.v2beta1.GroupsService/GetGroup";

/** One raw unary GetGroup (an empty request) with grpc-js: its error, or its answer's headers. */
function rawGetGroup(md: grpc.Metadata, deadline: number) {
  const client = new grpc.Client(`127.0.0.1:${ts.port}`, grpc.credentials.createInsecure());
  return new Promise<{ err: grpc.ServiceError | null; headers: grpc.Metadata | undefined }>(
    (resolve) => {
      let headers: grpc.Metadata | undefined;
      const call = client.makeUnaryRequest(
        getGroup,
        (x: Buffer) => x,
        (x: Buffer) => x,
        Buffer.alloc(0),
        md,
        { deadline },
        (e) => {
          client.close();
          resolve({ err: e, headers });
        },
      );
      call.on("metadata", (m: grpc.Metadata) => {
        headers = m;
      });
    },
  );
}

describe("grpc-js clients on the one port", () => {
  it("are refused without a token with UNAUTHENTICATED and ErrorInfo", async () => {
    const api = grpcJsGroups(ts.port);
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

  it("get PERMISSION_DENIED and INVALID_ARGUMENT with their details", async () => {
    const other = await ts.makeOrg("other");
    const api = grpcJsGroups(ts.port, other.owner.headers);
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

  it("get DEADLINE_EXCEEDED for a deadline already past", async () => {
    const md = new grpc.Metadata();
    md.set("authorization", org.owner.headers.authorization!);
    const { err } = await rawGetGroup(md, Date.now() - 1);
    expect(err).not.toBeNull();
    expect(grpcErr(err!).code).toBe(grpc.status.DEADLINE_EXCEEDED);
  });

  it("have their X-Request-Id echoed and every call logged with its code", async () => {
    const api = grpcJsGroups(ts.port, org.owner.headers);
    try {
      expect((await api.get(org.uid)).name).toBe("grpc-js");
    } finally {
      api.close();
    }
    // A well-formed request id from the client's metadata is the call's id, answered and logged.
    const md = new grpc.Metadata();
    md.set("x-request-id", "grpc-js-client-test-1");
    const { err, headers } = await rawGetGroup(md, Date.now() + 10_000);
    expect(err?.code).toBe(grpc.status.UNAUTHENTICATED);
    // An error without a message is trailers-only: its headers arrive with the status.
    const answered = headers ?? err?.metadata;
    expect(answered?.get("x-request-id")).toEqual(["grpc-js-client-test-1"]);

    const logged = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    await expect.poll(logged).toContainEqual(
      expect.objectContaining({
        protocol: "grpc",
        method: "gatehouse.iam.v2beta1.GroupsService/GetGroup",
        code: "OK",
      }),
    );
    await expect.poll(logged).toContainEqual(
      expect.objectContaining({
        reqId: "grpc-js-client-test-1",
        protocol: "grpc",
        code: "UNAUTHENTICATED",
      }),
    );
  });
});
