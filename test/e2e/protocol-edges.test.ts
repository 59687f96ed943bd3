import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { grpcEnvelope, rawGrpc } from "../helpers/raw-grpc.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// The edges of the RPC protocols that real clients (connect-web, grpc-web, grpcio) found.

let org: TestOrg;
const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("edges");
});

const getGroup = "/gatehouse.iam.v2beta1.GroupsService/GetGroup";

describe("unknown JSON fields", () => {
  it("are INVALID_ARGUMENT over Connect JSON, as over REST", async () => {
    const res = await fetch(`${ts.url}${getGroup}`, {
      method: "POST",
      headers: {
        ...org.owner.headers,
        "content-type": "application/json",
        "connect-protocol-version": "1",
      },
      body: JSON.stringify({ uid: org.uid, color: "blue" }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toMatch(/color/);
  });

  it("are INVALID_ARGUMENT over gRPC with JSON messages", async () => {
    const msg = Buffer.from(JSON.stringify({ uid: org.uid, color: "blue" }));
    const { grpcStatus } = await rawGrpc(
      ts.url,
      getGroup,
      { "content-type": "application/grpc+json", ...org.owner.headers },
      grpcEnvelope(msg),
    );
    expect(grpcStatus).toBe("3");
  });
});

describe("Connect GET", () => {
  it("serves read-only RPCs in Connect's cacheable GET form", async () => {
    const q = new URLSearchParams({
      connect: "v1",
      encoding: "json",
      message: JSON.stringify({ uid: org.uid }),
    });
    const res = await fetch(`${ts.url}${getGroup}?${q}`, { headers: org.owner.headers });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { name: string }).name).toBe("edges");
  });

  it("is what connect-node's useHttpGet sends, and it works", async () => {
    const transport = createConnectTransport({
      baseUrl: ts.url,
      httpVersion: "1.1",
      useHttpGet: true,
      interceptors: [
        (next) => (req) => {
          req.header.set("authorization", org.owner.headers.authorization!);
          return next(req);
        },
      ],
    });
    const groups = createClient(GroupsService, transport);
    expect((await groups.getGroup({ uid: org.uid })).name).toBe("edges");
    const listed = await groups.listGroups({ uidp: { descendantsOf: org.uid } });
    expect(listed.totalCount).toBe(0n);
  });

  it("is refused for an RPC with side effects", async () => {
    const q = new URLSearchParams({ connect: "v1", encoding: "json", message: "{}" });
    const res = await fetch(`${ts.url}/gatehouse.iam.v2beta1.GroupsService/DeleteGroup?${q}`, {
      headers: org.owner.headers,
    });
    expect(res.status).not.toBe(200);
  });
});

describe("an unknown method", () => {
  const unknown = "/gatehouse.iam.v2beta1.GroupsService/FrobnicateGroup";

  it("is UNIMPLEMENTED over gRPC, unary and streaming, with ErrorInfo (grpc-js)", async () => {
    const client = new grpc.Client(`127.0.0.1:${ts.port}`, grpc.credentials.createInsecure());
    const identity = (b: Buffer) => b;
    const unary = await new Promise<grpc.ServiceError>((resolve) => {
      client.makeUnaryRequest(unknown, identity, identity, Buffer.alloc(0), (err) => resolve(err!));
    });
    expect(unary.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(unary.metadata.get("grpc-status-details-bin")).toHaveLength(1);
    // A streaming call that hung instead would fail by the test's timeout.
    const streamed = await new Promise<grpc.ServiceError>((resolve) => {
      const call = client.makeServerStreamRequest(unknown, identity, identity, Buffer.alloc(0));
      call.on("data", () => {});
      call.on("error", resolve);
    });
    expect(streamed.code).toBe(grpc.status.UNIMPLEMENTED);
    client.close();
  });

  it("is UNIMPLEMENTED over gRPC-Web, in its headers", async () => {
    const res = await fetch(`${ts.url}${unknown}`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto" },
      body: new Uint8Array(5),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("grpc-status")).toBe("12");
    expect(res.headers.get("grpc-status-details-bin")).toBeTruthy();
  });

  it("is UNIMPLEMENTED over Connect: HTTP 501 and the error JSON with ErrorInfo", async () => {
    const res = await fetch(`${ts.url}${unknown}`, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-protocol-version": "1" },
      body: "{}",
    });
    expect(res.status).toBe(501);
    const body = (await res.json()) as { code: string; details: { type: string }[] };
    expect(body.code).toBe("unimplemented");
    expect(body.details[0]?.type).toBe("google.rpc.ErrorInfo");
  });

  it("leaves REST's own 404 alone", async () => {
    const res = await fetch(`${ts.url}/iam/v2beta1/nothing-here`, { headers: org.owner.headers });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { code: number }).code).toBe(5);
  });
});

describe("protocol-level errors carry ErrorInfo", () => {
  const grpcRaw = async (headers: Record<string, string>, body: Buffer) => {
    const a = await rawGrpc(ts.url, getGroup, { ...org.owner.headers, ...headers }, body);
    return { status: a.grpcStatus, details: a.details };
  };
  const message = Buffer.concat([Buffer.from([0x0a, 40]), Buffer.from("a".repeat(40))]);

  it.each<[string, Record<string, string>, () => Buffer]>([
    [
      "an unsupported compression",
      { "grpc-encoding": "snappy" },
      () => grpcEnvelope(message, true),
    ],
    ["a malformed grpc-timeout", { "grpc-timeout": "soon" }, () => grpcEnvelope(message)],
    ["a truncated frame", {}, () => grpcEnvelope(message).subarray(0, 8)],
  ])("gRPC: %s", async (_what, headers, body) => {
    const r = await grpcRaw(headers, body());
    expect(r.status).toBeDefined();
    expect(r.status).not.toBe("0");
    expect(r.details).toBe(true);
  });

  it("gRPC-Web: an unsupported compression, in the trailer frame", async () => {
    const res = await fetch(`${ts.url}${getGroup}`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", "grpc-encoding": "snappy" },
      body: grpcEnvelope(message, true),
    });
    const body = Buffer.from(await res.arrayBuffer()).toString("latin1");
    expect(body).toMatch(/grpc-status: 12/);
    expect(body).toMatch(/grpc-status-details-bin: [A-Za-z0-9+/]+/);
  });

  it.each<[string, Record<string, string>, string]>([
    ["malformed JSON", { "content-type": "application/json" }, "{"],
    [
      "an unsupported content encoding",
      { "content-type": "application/json", "content-encoding": "snappy" },
      "{}",
    ],
  ])("Connect: %s", async (_what, headers, body) => {
    const res = await fetch(`${ts.url}${getGroup}`, {
      method: "POST",
      headers: { ...org.owner.headers, "connect-protocol-version": "1", ...headers },
      body,
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    const json = (await res.json()) as { details?: { type: string }[] };
    expect(json.details?.[0]?.type).toBe("google.rpc.ErrorInfo");
  });
});

describe("gRPC-Web text mode (Google's grpc-web default)", () => {
  /** Frames of a gRPC-Web body: [flag, payload]. */
  function frames(bytes: Buffer): Array<[number, Buffer]> {
    const out: Array<[number, Buffer]> = [];
    for (let i = 0; i + 5 <= bytes.length; ) {
      const len = bytes.readUInt32BE(i + 1);
      out.push([bytes[i]!, bytes.subarray(i + 5, i + 5 + len)]);
      i += 5 + len;
    }
    return out;
  }

  it("answers a base64 request in base64, status in the trailer frame", async () => {
    const msg = Buffer.concat([Buffer.from([0x0a, org.uid.length]), Buffer.from(org.uid)]);
    const head = Buffer.alloc(5);
    head.writeUInt32BE(msg.length, 1);
    const res = await fetch(`${ts.url}${getGroup}`, {
      method: "POST",
      headers: {
        ...org.owner.headers,
        "content-type": "application/grpc-web-text",
        accept: "application/grpc-web-text",
        "x-grpc-web": "1",
      },
      body: Buffer.concat([head, msg]).toString("base64"),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/grpc-web-text+proto");
    const text = await res.text();
    expect(text).toMatch(/^[A-Za-z0-9+/=]+$/);
    // Each chunk is padded on its own: decode quantum by quantum, as grpc-web does.
    const bytes = Buffer.concat((text.match(/.{4}/g) ?? []).map((q) => Buffer.from(q, "base64")));
    const [data, trailer] = frames(bytes);
    expect(data?.[0]).toBe(0);
    expect(data?.[1].toString("latin1")).toContain("edges");
    expect(trailer?.[0]).toBe(0x80);
    expect(trailer?.[1].toString()).toMatch(/grpc-status: ?0/);
  });
});

describe("an RPC's path asked with another method", () => {
  const createGroup = "/gatehouse.iam.v2beta1.GroupsService/CreateGroup";
  it("is 405 with the methods it takes, and nothing runs", async () => {
    for (const method of ["PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]) {
      const create = await fetch(`${ts.url}${createGroup}`, {
        method,
        headers: { ...org.owner.headers, "content-type": "application/json" },
        ...(method === "HEAD" || method === "OPTIONS"
          ? {}
          : { body: JSON.stringify({ group: { parent: org.uid, name: `by-${method}` } }) }),
      });
      expect([method, create.status]).toEqual([method, 405]);
      expect(create.headers.get("allow")).toBe("POST");
      // GetGroup has no side effects: Connect's GET serves it too.
      const get = await fetch(`${ts.url}${getGroup}`, { method });
      expect([method, get.status, get.headers.get("allow")]).toEqual([method, 405, "POST, GET"]);
    }
    const children = await fetch(`${ts.url}/iam/v2beta1/groups?uidp.childrenOf=${org.uid}`, {
      headers: org.owner.headers,
    });
    const names = ((await children.json()) as { groups: { name: string }[] }).groups.map(
      (g) => g.name,
    );
    expect(names.filter((n) => n.startsWith("by-"))).toEqual([]);
  });
});
