import { beforeAll, describe, expect, it } from "vitest";
import { checkPatchOrder, type RouterPatch, routerPatches } from "../../src/grpc/router-patches.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// The patches to connect-node's router live in one plugin, in an order kept as code: each
// patch names those it must follow, and the plugin refuses to start out of order. The order
// matters where two patches touch one answer: gRPC-Web's ErrorInfo must be added to binary
// frames, before the text mode base64-encodes them.

const named = (name: string) => routerPatches.find((p) => p.name === name)!;

describe("the order of the router patches", () => {
  it("is the order each patch asks for", () => {
    expect(() => checkPatchOrder(routerPatches)).not.toThrow();
    expect(named("grpc-web-error-info").after).toContain("grpc-web-text");
  });

  it("is refused when a patch comes before one it must follow", () => {
    const swapped: RouterPatch[] = routerPatches.filter((p) => p.name !== "grpc-web-text");
    swapped.push(named("grpc-web-text"));
    expect(() => checkPatchOrder(swapped)).toThrow(
      "router patch grpc-web-error-info must come after grpc-web-text",
    );
  });

  it("is refused when a patch names one that is not there", () => {
    const alone = [named("grpc-web-error-info")];
    expect(() => checkPatchOrder(alone)).toThrow("no patch grpc-web-text to come after");
  });
});

/** A gRPC-Web text body: base64, each chunk padded on its own; decoded to bytes. */
function fromText(text: string): Buffer {
  return Buffer.concat(text.split(/(?<==)(?=[^=])/).map((c) => Buffer.from(c, "base64")));
}

/** The trailer frame (flag 0x80) of a gRPC-Web body, as text. */
function trailerFrame(body: Buffer): string {
  for (let at = 0; at + 5 <= body.length; ) {
    const length = body.readUInt32BE(at + 1);
    if (body[at] === 0x80) return body.subarray(at + 5, at + 5 + length).toString("latin1");
    at += 5 + length;
  }
  throw new Error("no trailer frame");
}

describe("the patches on a served gRPC-Web text call", () => {
  let org: TestOrg;
  const ts = useTestServer();
  beforeAll(async () => {
    org = await ts.makeOrg("patched");
  });

  it("a frame cut short: a text answer whose trailer frame carries ErrorInfo", async () => {
    const res = await fetch(`${ts.url}/gatehouse.iam.v2beta1.GroupsService/GetGroup`, {
      method: "POST",
      headers: { ...org.owner.headers, "content-type": "application/grpc-web-text" },
      // A message prefix that promises 10 bytes, and 2 of them.
      body: Buffer.from([0, 0, 0, 0, 10, 1, 2]).toString("base64"),
    });
    expect(res.headers.get("content-type")).toMatch(/^application\/grpc-web-text/);
    const trailers = trailerFrame(fromText(await res.text()));
    expect(trailers).toMatch(/grpc-status: ?3\r\n/);
    expect(trailers).toMatch(/grpc-status-details-bin: ?\S+/);
  });
});
