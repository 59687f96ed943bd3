import http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { GetGroupRequestSchema } from "../gen/gatehouse/iam/v2beta1/groups_pb.js";

/**
 * A sender of one unary gRPC GetGroup over one HTTP/2 connection (node:http2), for the open
 * loop: the request frame is encoded once, and an answer is judged by its grpc-status
 * trailer alone. The grpc-js client does far more per call (its own objects, metadata,
 * decoding the answer), and its garbage collections, 20-50 ms in the generator, showed up as
 * server latency in the open-loop figures (bench/RESULTS.md, "Open-loop tails"). This is the
 * gRPC counterpart of bench/http-sender.ts. Any grpc-status but 0 fails the call.
 */
export function h2GrpcSender(
  port: number,
  headers: Record<string, string>,
  uid: string,
): { send: () => Promise<void>; close: () => void } {
  const message = toBinary(GetGroupRequestSchema, create(GetGroupRequestSchema, { uid }));
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on("error", () => {
    // A broken session fails its calls, each of which says so.
  });
  const requestHeaders = {
    ":method": "POST",
    ":path": "/gatehouse.iam.v2beta1.GroupsService/GetGroup",
    "content-type": "application/grpc",
    te: "trailers",
    ...headers,
  };
  return {
    send: () =>
      new Promise<void>((resolve, reject) => {
        const stream = session.request(requestHeaders);
        let status: string | undefined;
        stream.on("response", (h) => {
          // A trailers-only answer carries grpc-status in its headers.
          const s = h["grpc-status"];
          if (typeof s === "string") status = s;
        });
        stream.on("trailers", (t) => {
          const s = t["grpc-status"];
          if (typeof s === "string") status = s;
        });
        stream.on("data", () => {});
        stream.on("error", reject);
        stream.on("close", () =>
          status === "0" ? resolve() : reject(new Error(`grpc-status ${status ?? "missing"}`)),
        );
        stream.end(frame);
      }),
    close: () => session.close(),
  };
}
