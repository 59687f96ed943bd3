import { readFile } from "node:fs/promises";
import http from "node:http";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { expect, it } from "vitest";
import { useTestServer } from "../helpers/test-server.js";

// The console's 185 kB script was sent uncompressed whatever the browser accepted, and `GET /`
// answered a JSON 404 to a person typing the server's address in a browser.
// (HEAD / from a browser is redirected the same way.) Its files now go brotli or
// gzip by Accept-Encoding (compressed once, at build), and a browser at / goes to /console/.

const ts = useTestServer();

/** GET over HTTP/1.1 with exactly `headers`: nothing added, nothing decompressed. */
function get(path: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>(
    (resolve, reject) => {
      http
        .get(`${ts.url}${path}`, { headers }, (res) => {
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

/** The console's script, as index.html names it. */
async function scriptPath(): Promise<string> {
  const index = await get("/console/");
  const name = /src="\.?\/?(?:console\/)?(main-[\w-]+\.js)"/.exec(index.body.toString())?.[1];
  expect(name, index.body.toString()).toBeDefined();
  return `/console/${name}`;
}

it("sends the script brotli or gzip compressed, as the client accepts, and plain to others", async () => {
  const path = await scriptPath();
  const plain = await get(path);
  expect(plain.status).toBe(200);
  expect(plain.headers["content-encoding"]).toBeUndefined();
  expect(plain.headers.vary).toBe("Accept-Encoding");

  const br = await get(path, { "accept-encoding": "gzip, deflate, br" });
  expect(br.headers["content-encoding"]).toBe("br");
  expect(br.headers.vary).toBe("Accept-Encoding");
  expect(br.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
  expect(br.headers["content-type"]).toBe("text/javascript; charset=utf-8");
  expect(br.body.length).toBeLessThan(plain.body.length / 3);
  expect(brotliDecompressSync(br.body).equals(plain.body)).toBe(true);

  const gz = await get(path, { "accept-encoding": "gzip" });
  expect(gz.headers["content-encoding"]).toBe("gzip");
  expect(gunzipSync(gz.body).equals(plain.body)).toBe(true);

  // A refused encoding is not sent.
  const noBr = await get(path, { "accept-encoding": "br;q=0, gzip" });
  expect(noBr.headers["content-encoding"]).toBe("gzip");
  const identity = await get(path, { "accept-encoding": "identity" });
  expect(identity.headers["content-encoding"]).toBeUndefined();
  expect(identity.body.equals(plain.body)).toBe(true);
});

it("compresses the page too, which stays uncached and keeps its CSP", async () => {
  const page = await get("/console/", { "accept-encoding": "br" });
  expect(page.status).toBe(200);
  expect(page.headers["content-encoding"]).toBe("br");
  expect(page.headers["cache-control"]).toBe("no-cache");
  expect(page.headers["content-security-policy"]).toContain("default-src 'none'");
  expect(brotliDecompressSync(page.body).toString()).toContain("<!doctype html>");
});

it("sends a browser at / to the console, and answers other clients the API's NOT_FOUND", async () => {
  const browser = await get("/", {
    accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
  });
  expect(browser.status).toBe(302);
  expect(browser.headers.location).toBe("/console/");
  expect(browser.headers.vary).toBe("Accept");

  for (const accept of [undefined, "*/*", "application/json"]) {
    const api = await get("/", accept ? { accept } : {});
    expect(api.status).toBe(404);
    expect(api.headers["content-type"]).toMatch(/^application\/json/);
    expect(JSON.parse(api.body.toString())).toMatchObject({ code: 5 });
    expect(api.headers.vary).toBe("Accept");
  }
});

it("weighs what the README says it weighs (script, styles and index.html, compressed)", async () => {
  const readme = await readFile(new URL("../../README.md", import.meta.url), "utf8");
  const said = /esbuild; ([\d.]+) kB gzipped, ([\d.]+) kB with brotli/.exec(readme);
  expect(said, "README's console size line").not.toBeNull();
  const index = await get("/console/");
  const names = [
    ...index.body
      .toString()
      .matchAll(/(?:src|href)="\.?\/?(?:console\/)?((?:main|styles)-[\w-]+\.(?:js|css))"/g),
  ].map((m) => m[1]);
  expect(names).toHaveLength(2);
  const weigh = async (encoding: string) => {
    let bytes = 0;
    for (const path of ["/console/", ...names.map((n) => `/console/${n}`)]) {
      const res = await get(path, { "accept-encoding": encoding });
      expect(res.headers["content-encoding"]).toBe(encoding);
      bytes += res.body.length;
    }
    return bytes / 1024;
  };
  // Within 2 kB: a figure to update when the console grows, not on every change.
  expect(Math.abs((await weigh("gzip")) - Number(said?.[1]))).toBeLessThan(2);
  expect(Math.abs((await weigh("br")) - Number(said?.[2]))).toBeLessThan(2);
});
