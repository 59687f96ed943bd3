import { readFileSync } from "node:fs";
import http2 from "node:http2";
import https from "node:https";
import net from "node:net";
import { resolve } from "node:path";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { GetGroupRequestSchema, GroupSchema } from "../../gen/gatehouse/iam/v2beta1/groups_pb.js";
import { grpcEnvelope, rawGrpc } from "../helpers/raw-grpc.js";
import { startTestServer } from "../helpers/test-server.js";

// A self-signed certificate for 127.0.0.1, made for these tests only (not a secret).
const certPath = resolve("test/fixtures/tls/cert.pem");
const keyPath = resolve("test/fixtures/tls/key.pem");
const ca = readFileSync(certPath);

function h2Get(url: string, path: string, headers: Record<string, string>) {
  return new Promise<{ status: number; body: string; alpn: string | false }>((done, fail) => {
    const session = http2.connect(url, { ca });
    session.on("error", fail);
    const req = session.request({ ":path": path, ...headers });
    let body = "";
    let status = 0;
    req.on("response", (h) => {
      status = Number(h[":status"]);
    });
    req.on("data", (d) => {
      body += d;
    });
    req.on("end", () => {
      const alpn = (session.socket as { alpnProtocol?: string | false }).alpnProtocol ?? false;
      session.close();
      done({ status, body, alpn });
    });
    req.end();
  });
}

/** A unary gRPC GetGroup over HTTP/2 (TLS when `url` is https): grpc-status and the group. */
async function grpcGetGroup(url: string, uid: string, headers: Record<string, string>) {
  const request = toBinary(GetGroupRequestSchema, create(GetGroupRequestSchema, { uid }));
  const answer = await rawGrpc(
    url,
    "/gatehouse.iam.v2beta1.GroupsService/GetGroup",
    headers,
    grpcEnvelope(request),
    { ca },
  );
  const name =
    answer.body.length > 5 ? fromBinary(GroupSchema, answer.body.subarray(5)).name : undefined;
  return { grpcStatus: answer.grpcStatus, name };
}

function h1Get(url: string, path: string, headers: Record<string, string>) {
  return new Promise<{ status: number; body: string; alpn: string | false }>((done, fail) => {
    const req = https.get(`${url}${path}`, { ca, headers, agent: false }, (res) => {
      let body = "";
      res.on("data", (d) => {
        body += d;
      });
      res.on("end", () =>
        done({
          status: res.statusCode ?? 0,
          body,
          alpn: (res.socket as { alpnProtocol?: string | false }).alpnProtocol ?? false,
        }),
      );
    });
    req.on("error", fail);
  });
}

describe("TLS on the one port", () => {
  it("negotiates h2 or http/1.1 by ALPN and serves REST on both", async () => {
    const ts = await startTestServer({ GATEHOUSE_TLS_CERT: certPath, GATEHOUSE_TLS_KEY: keyPath });
    try {
      const { uid, owner } = await ts.makeOrg("tls");
      const url = `https://127.0.0.1:${ts.port}`;
      const path = `/iam/v2beta1/groups/${uid}`;
      const h2 = await h2Get(url, path, owner.headers);
      expect(h2).toMatchObject({ status: 200, alpn: "h2" });
      expect(JSON.parse(h2.body)).toMatchObject({ uid, name: "tls" });
      const h1 = await h1Get(url, path, owner.headers);
      expect(h1.status).toBe(200);
      expect(h1.alpn === false || h1.alpn === "http/1.1").toBe(true);
      expect(JSON.parse(h1.body)).toMatchObject({ uid });
      // gRPC over TLS: the lean unary path serves the secure server's streams too.
      expect(await grpcGetGroup(url, uid, owner.headers)).toEqual({ grpcStatus: "0", name: "tls" });
    } finally {
      await ts.close();
    }
  });
});

/**
 * An interceptor that holds one call until released. `holdNext()` arms it and resolves once
 * that call is inside the server, so shutdown begins with it in flight however slowly it
 * connected; `release()` lets it go on.
 */
function holdOneCall() {
  let entered: (() => void) | undefined;
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  const interceptor: Interceptor = (next) => async (req) => {
    if (entered) {
      entered();
      entered = undefined;
      await released;
    }
    return next(req);
  };
  const holdNext = () =>
    new Promise<void>((done) => {
      entered = done;
    });
  return { interceptor, holdNext, release };
}

/** Resolves once `port` refuses a new connection: the server's shutdown has begun. */
function refused(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("error", () => resolve());
    socket.once("connect", () => {
      socket.destroy();
      reject(new Error(`port ${port} still takes connections after close()`));
    });
  });
}

describe("graceful shutdown", () => {
  it("lets an in-flight call finish, then refuses new connections", async () => {
    const slow = holdOneCall();
    const ts = await startTestServer({}, { interceptors: [slow.interceptor] });
    const { uid, owner } = await ts.makeOrg("slow");
    const held = slow.holdNext();
    const inFlight = fetch(`${ts.url}/iam/v2beta1/groups/${uid}`, { headers: owner.headers });
    await held;
    const closed = ts.close();
    await refused(ts.port);
    slow.release();
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ uid });
    await closed;
    await expect(fetch(`${ts.url}/healthz`)).rejects.toThrow();
  });

  it("lets an in-flight gRPC call finish", async () => {
    const slow = holdOneCall();
    const ts = await startTestServer({}, { interceptors: [slow.interceptor] });
    const { uid, owner } = await ts.makeOrg("slow-grpc");
    const held = slow.holdNext();
    const inFlight = grpcGetGroup(ts.url, uid, owner.headers);
    await held;
    const closed = ts.close();
    await refused(ts.port);
    slow.release();
    expect(await inFlight).toEqual({ grpcStatus: "0", name: "slow-grpc" });
    await closed;
  });
});
