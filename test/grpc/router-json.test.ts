import { beforeAll, describe, expect, it } from "vitest";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// Every JSON answer connect-node's router writes carries each Timestamp with its millisecond
// fraction, a whole second as `...:00.000Z`, on every protocol and encoding it speaks JSON in:
// compressed answers too (a hook that rewrote the router's answers after it wrote them could
// not read gzip, and a whole-second time went out as `...:00Z`), gRPC-Web and gRPC with +json,
// and the Connect GET form. The server's clock stands on a whole second.

const wholeSecond = Math.floor(Date.now() / 1000) * 1000;
const rfc3339ms = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const list = "gatehouse.iam.v2beta1.GroupsService/ListGroups";

/** Every string in `json` that starts like a date-time. */
function times(json: unknown, out: string[] = []): string[] {
  if (typeof json === "string" && /^\d{4}-\d\d-\d\dT/.test(json)) out.push(json);
  else if (json && typeof json === "object") for (const v of Object.values(json)) times(v, out);
  return out;
}

/** The JSON message of a gRPC-Web (or gRPC) answer's first data frame. */
function firstFrame(body: Buffer): unknown {
  expect(body[0], "a data frame, uncompressed").toBe(0);
  return JSON.parse(body.subarray(5, 5 + body.readUInt32BE(1)).toString("utf8"));
}

describe.each([
  ["with the lean paths", "true"],
  ["on the router alone", "false"],
])("router JSON %s", (_name, lean) => {
  let org: TestOrg;
  const ts = useTestServer({ GATEHOUSE_LEAN_PATHS: lean }, { now: () => wholeSecond });
  beforeAll(async () => {
    org = await ts.makeOrg("times");
    // Enough groups that a list's JSON passes the 1 KiB under which nothing is compressed.
    for (let i = 0; i < 12; i++) {
      const r = await fetch(`${ts.url}/gatehouse.iam.v2beta1.GroupsService/CreateGroup`, {
        method: "POST",
        headers: { ...org.owner.headers, "content-type": "application/json" },
        body: JSON.stringify({ parent: org.uid, group: { name: `group-${i}` } }),
      });
      expect(r.status).toBe(200);
    }
  });

  const expectMilliseconds = (json: unknown) => {
    const found = times(json);
    expect(found.length).toBeGreaterThan(20);
    for (const t of found) expect(t).toMatch(rfc3339ms);
    expect(found).toContain(new Date(wholeSecond).toISOString());
  };
  const listRequest = () => ({ uidp: { descendantsOf: org.uid }, pageSize: 50 });

  it.each([
    ["application/json", "gzip"],
    ["application/json; charset=utf-8", "gzip"],
    ["application/json; charset=utf-8", "br"],
    ["application/json; charset=utf-8", "identity"],
  ])("Connect POST %s, accepting %s", async (type, accept) => {
    const res = await fetch(`${ts.url}/${list}`, {
      method: "POST",
      headers: {
        ...org.owner.headers,
        "content-type": type,
        "connect-protocol-version": "1",
        "accept-encoding": accept,
      },
      body: JSON.stringify(listRequest()),
    });
    expect(res.status).toBe(200);
    // fetch decompresses; the answer was compressed when asked.
    if (accept !== "identity") expect(res.headers.get("content-encoding")).toBe(accept);
    expectMilliseconds(await res.json());
  });

  it("Connect GET, gzip", async () => {
    const q = new URLSearchParams({
      connect: "v1",
      encoding: "json",
      message: JSON.stringify(listRequest()),
    });
    const res = await fetch(`${ts.url}/${list}?${q}`, {
      headers: { ...org.owner.headers, "accept-encoding": "gzip" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-encoding")).toBe("gzip");
    expectMilliseconds(await res.json());
  });

  it("gRPC-Web with +json", async () => {
    const message = Buffer.from(JSON.stringify(listRequest()));
    const frame = Buffer.alloc(5 + message.length);
    frame.writeUInt32BE(message.length, 1);
    message.copy(frame, 5);
    const res = await fetch(`${ts.url}/${list}`, {
      method: "POST",
      headers: { ...org.owner.headers, "content-type": "application/grpc-web+json" },
      body: frame,
    });
    expect(res.status).toBe(200);
    expectMilliseconds(firstFrame(Buffer.from(await res.arrayBuffer())));
  });

  it("a method whose answer holds no Timestamp is served as before", async () => {
    const res = await fetch(`${ts.url}/gatehouse.iam.v2beta1.CallerService/GetCaller`, {
      method: "POST",
      headers: {
        ...org.owner.headers,
        "content-type": "application/json; charset=utf-8",
        "accept-encoding": "gzip",
      },
      body: "{}",
    });
    expect(res.status, await res.clone().text()).toBe(200);
  });
});
