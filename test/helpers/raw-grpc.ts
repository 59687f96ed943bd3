import http2 from "node:http2";

/** What one hand-made gRPC call answered. */
export interface RawGrpcAnswer {
  /** The HTTP status. */
  status: number;
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: Buffer;
  /** grpc-status: in the trailers, or in the headers of a trailers-only answer. */
  grpcStatus: string | undefined;
  /** Whether google.rpc.Status details (grpc-status-details-bin) came with it. */
  details: boolean;
}

/**
 * Send one gRPC request by hand over HTTP/2 (for what a real client will not send: bombs,
 * bad headers, truncated frames, JSON messages) and read the whole answer. `headers` are
 * added to (and may replace) POST, `content-type: application/grpc` and `te: trailers`;
 * `connect` are the session's options (`ca` for an https URL).
 */
export async function rawGrpc(
  url: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer,
  connect: http2.SecureClientSessionOptions = {},
): Promise<RawGrpcAnswer> {
  const client = http2.connect(url, connect);
  try {
    return await new Promise<RawGrpcAnswer>((resolve, reject) => {
      const req = client.request({
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc",
        te: "trailers",
        ...headers,
      });
      let head: http2.IncomingHttpHeaders = {};
      let trailers: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      req.on("response", (h) => {
        head = h;
      });
      req.on("trailers", (t) => {
        trailers = t;
      });
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const all = { ...head, ...trailers };
        resolve({
          status: Number(head[":status"]),
          headers: head,
          trailers,
          body: Buffer.concat(chunks),
          grpcStatus: all["grpc-status"] as string | undefined,
          details: typeof all["grpc-status-details-bin"] === "string",
        });
      });
      req.on("error", reject);
      req.end(body);
    });
  } finally {
    client.close();
  }
}

/** A gRPC length-prefixed message; flag 1 marks a compressed one. */
export function grpcEnvelope(message: Uint8Array, compressed = false): Buffer {
  const head = Buffer.alloc(5);
  head[0] = compressed ? 1 : 0;
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}
