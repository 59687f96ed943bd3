import Fastify from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addConnectParseErrorStatus } from "../../src/grpc/request-parse-errors.js";

// The hook against responses written the ways Node allows: head then write (what connect-node
// does today), or head then end with the body or without one, as a later version might.
const parseFailure = JSON.stringify({ code: "internal", message: "parse binary: bad tag" });
const app = Fastify();
addConnectParseErrorStatus(app, "iam.test");
app.addContentTypeParser("application/proto", { parseAs: "buffer" }, (_req, body, done) =>
  done(null, body),
);
// RPC-shaped routes, as the Connect router's are: /package.Service/Method.
app.post("/test.v1.Answers/:how", (req, reply) => {
  reply.hijack();
  const raw = reply.raw;
  const how = (req.params as { how: string }).how;
  const body =
    how === "other" ? JSON.stringify({ code: "internal", message: "boom" }) : parseFailure;
  raw.writeHead(500, { "content-type": "application/json", "content-length": body.length });
  if (how === "write" || how === "other") {
    raw.write(Buffer.from(body));
    raw.end();
  } else if (how === "end") {
    raw.end(Buffer.from(body));
  } else {
    raw.end();
  }
});
beforeAll(() => app.ready());
afterAll(() => app.close());

const call = (how: string) =>
  app.inject({
    method: "POST",
    url: `/test.v1.Answers/${how}`,
    headers: { "content-type": "application/proto" },
    payload: Buffer.from([0]),
  });

describe("addConnectParseErrorStatus", () => {
  it.each(["write", "end"])("turns a parse failure written by %s into 400", async (how) => {
    const res = await call(how);
    expect(res.statusCode).toBe(400);
    expect(Number(res.headers["content-length"])).toBe(res.rawPayload.length);
    expect(res.json()).toMatchObject({
      code: "invalid_argument",
      message: "the request message cannot be decoded: bad tag",
      details: [{ type: "google.rpc.ErrorInfo" }],
    });
  });

  it("keeps any other 500 a 500, adding the ErrorInfo it lacked, body or none", async () => {
    const other = await call("other");
    expect(other.statusCode).toBe(500);
    expect(Number(other.headers["content-length"])).toBe(other.rawPayload.length);
    // An unexpected failure's cause stays out of the answer (API.md: a generic message).
    expect(other.json()).toMatchObject({
      code: "internal",
      message: "Internal error",
      details: [{ type: "google.rpc.ErrorInfo" }],
    });
    expect((await call("none")).statusCode).toBe(500);
  });
});
