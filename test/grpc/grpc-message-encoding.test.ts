import { describe, expect, it } from "vitest";
import { encodeGrpcMessage } from "../../src/grpc/grpc-message-encoding.js";

describe("encodeGrpcMessage", () => {
  it.each([
    [
      "Invalid argument: name: must match ^[a-z0-9 ._-]{1,}$",
      "Invalid argument: name: must match ^[a-z0-9 ._-]{1,}$",
    ],
    ["100% sure", "100%25 sure"],
    ["line\nbreak", "line%0Abreak"],
    ["très", "tr%C3%A8s"],
    ["", ""],
  ])("encodes %j as %j, which decodeURIComponent reverses", (message, encoded) => {
    expect(encodeGrpcMessage(message)).toBe(encoded);
    expect(decodeURIComponent(encoded)).toBe(message);
  });
});
