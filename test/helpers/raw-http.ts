import http from "node:http";

/** What one hand-made HTTP/1.1 request answered: nothing added, nothing decompressed. */
export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** POST `body` over HTTP/1.1 with exactly `headers` (and its content-length). */
export function rawPost(
  url: string,
  headers: Record<string, string>,
  body: Buffer,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: "POST", headers: { ...headers, "content-length": String(body.length) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    // The server may answer and close before reading a large body: the answer is what counts.
    req.on("error", reject);
    req.end(body);
  });
}
