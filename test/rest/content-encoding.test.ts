import { gzipSync } from "node:zlib";
import { beforeAll, expect, it } from "vitest";
import { restCall } from "../helpers/rest-client.js";
import { type TestOrg, useTestServer } from "../helpers/test-server.js";

// issue 23: REST read a compressed body as if it were plain. It refuses every
// Content-Encoding but identity with 415, before reading the body.

let org: TestOrg;
const ts = useTestServer();
beforeAll(async () => {
  org = await ts.makeOrg("encoding");
});

const post = (body: Buffer | string, encoding?: string) =>
  fetch(`${ts.url}/iam/v2beta1/groups/${org.uid}`, {
    method: "POST",
    headers: {
      ...org.owner.headers,
      "content-type": "application/json",
      ...(encoding ? { "content-encoding": encoding } : {}),
    },
    body,
  });

for (const encoding of ["gzip", "deflate", "br", "x-unknown"]) {
  it(`Content-Encoding: ${encoding} is 415, and nothing is created`, async () => {
    const res = await post(gzipSync(JSON.stringify({ name: `gz-${encoding}` })), encoding);
    expect(res.status).toBe(415);
    const json = (await res.json()) as { code: number; message: string };
    expect(json.code).toBe(3);
    expect(json.message).toContain("Content-Encoding");
    const list = await restCall(
      ts.url,
      "GET",
      `/iam/v2beta1/groups?uidp.childrenOf=${org.uid}&name=gz-${encoding}`,
      undefined,
      org.owner.headers,
    );
    expect(list.json.totalCount).toBe("0");
  });
}

it("a plain body, or Content-Encoding: identity, is served (the baseline)", async () => {
  expect((await post(JSON.stringify({ name: "plain" }))).status).toBe(200);
  expect((await post(JSON.stringify({ name: "identity" }), "identity")).status).toBe(200);
});
