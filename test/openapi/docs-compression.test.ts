import http from "node:http";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { expect, it } from "vitest";
import { useTestServer } from "../helpers/test-server.js";

// The Swagger UI files come from an npm package with no compressed copies beside them: the
// server compresses them once a process, when a request first accepts an encoding, on libuv's
// threads (they were compressed at every server start: about 0.5 s of CPU each).

const ts = useTestServer();
const other = useTestServer();

/** GET over HTTP/1.1 with exactly `headers`: nothing added, nothing decompressed. */
function get(url: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>(
    (resolve, reject) => {
      http
        .get(url, { headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () =>
            resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }),
          );
        })
        .on("error", reject);
    },
  );
}

it("sends the Swagger UI bundle brotli or gzip compressed as accepted, from any server", async () => {
  const path = "/docs/swagger-ui-bundle.js";
  const plain = await get(`${ts.url}${path}`);
  expect(plain.status).toBe(200);
  expect(plain.headers["content-encoding"]).toBeUndefined();
  expect(plain.headers.vary).toBe("Accept-Encoding");
  // Two at once, before anything is compressed, then a second server of the same process.
  const [br, gz] = await Promise.all([
    get(`${ts.url}${path}`, { "accept-encoding": "gzip, br" }),
    get(`${ts.url}${path}`, { "accept-encoding": "gzip" }),
  ]);
  expect(br.headers["content-encoding"]).toBe("br");
  expect(br.body.length).toBeLessThan(plain.body.length / 3);
  expect(brotliDecompressSync(br.body).equals(plain.body)).toBe(true);
  expect(gz.headers["content-encoding"]).toBe("gzip");
  expect(gunzipSync(gz.body).equals(plain.body)).toBe(true);
  const again = await get(`${other.url}${path}`, { "accept-encoding": "br" });
  expect(again.headers["content-encoding"]).toBe("br");
  expect(again.body.equals(br.body)).toBe(true);
  // A refused encoding is not sent.
  const identity = await get(`${ts.url}${path}`, { "accept-encoding": "br;q=0, gzip;q=0" });
  expect(identity.headers["content-encoding"]).toBeUndefined();
  expect(identity.body.equals(plain.body)).toBe(true);
});
