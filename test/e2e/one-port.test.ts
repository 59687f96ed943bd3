import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { type TestCaller, useTestServer } from "../helpers/test-server.js";

// The real server on one port, seen by buf curl (schema from reflection) and by its log.
let owner: TestCaller;
let orgUid: string;
const lines: Record<string, unknown>[] = [];

const ts = useTestServer(
  { GATEHOUSE_LOG_LEVEL: "info" },
  { logStream: { write: (line) => void lines.push(JSON.parse(line)) } },
);
beforeAll(async () => {
  const org = await ts.makeOrg("one-port");
  owner = org.owner;
  orgUid = org.uid;
});

const buf = (...args: string[]) =>
  promisify(execFile)(resolve("node_modules/.bin/buf"), ["curl", ...args], { timeout: 30_000 });

describe("buf curl through reflection", () => {
  it("lists the API services", async () => {
    const { stdout } = await buf("--http2-prior-knowledge", "--list-services", ts.url);
    expect(stdout.split("\n")).toEqual(
      expect.arrayContaining([
        "gatehouse.iam.v2beta1.GroupsService",
        "gatehouse.sts.v1.SecurityTokenService",
        "grpc.health.v1.Health",
      ]),
    );
  });

  it.each(["grpc", "connect", "grpcweb"])("gets a group over %s", async (protocol) => {
    const { stdout } = await buf(
      "--http2-prior-knowledge",
      "--protocol",
      protocol,
      "-H",
      `authorization: Bearer ${owner.token}`,
      "-d",
      JSON.stringify({ uid: orgUid }),
      `${ts.url}/gatehouse.iam.v2beta1.GroupsService/GetGroup`,
    );
    expect(JSON.parse(stdout)).toMatchObject({ uid: orgUid, name: "one-port" });
  });

  it("shows the error details of a refused call", async () => {
    const err = await buf(
      "--http2-prior-knowledge",
      "--protocol",
      "grpc",
      "-d",
      JSON.stringify({ uid: orgUid }),
      `${ts.url}/gatehouse.iam.v2beta1.GroupsService/GetGroup`,
    ).then(
      () => ({ stderr: "" }),
      (e: { stderr: string }) => e,
    );
    // buf curl prints the error, with its details, on stderr.
    expect(JSON.parse(err.stderr)).toMatchObject({
      code: "unauthenticated",
      details: [{ type: "google.rpc.ErrorInfo" }],
    });
  });
});

describe("the request log", () => {
  it("has one line per request with method, protocol, status, code and duration", async () => {
    const before = lines.length;
    const res = await fetch(`${ts.url}/iam/v2beta1/groups/${orgUid}`, {
      headers: { ...owner.headers, "x-request-id": "trace-me-1" },
    });
    expect(res.headers.get("x-request-id")).toBe("trace-me-1");
    const denied = await fetch(`${ts.url}/iam/v2beta1/groups/${orgUid}`);
    expect(denied.status).toBe(401);
    // Each line is written when its response has gone out, which may be after the client has
    // it: wait for both (a busy machine can take a while), but not forever.
    const requests = () => lines.slice(before).filter((l) => l.msg === "request");
    for (let waited = 0; requests().length < 2 && waited < 5_000; waited += 10) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(requests()).toEqual([
      expect.objectContaining({
        reqId: "trace-me-1",
        method: "gatehouse.iam.v2beta1.GroupsService/GetGroup",
        protocol: "rest",
        status: 200,
        code: "OK",
        durationMs: expect.any(Number),
      }),
      expect.objectContaining({ status: 401, code: "UNAUTHENTICATED" }),
    ]);
    // The bearer token never reaches the log.
    expect(JSON.stringify(lines)).not.toContain(owner.token);
  });
});
