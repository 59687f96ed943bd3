import type { DescMessage, JsonObject, Message } from "@bufbuild/protobuf";
import { createJsonWriter } from "../../src/json/message-json.js";
import { isInputOnly } from "../../src/rest/input-only.js";

// What a test expects the API to write for a message it got another way (a gRPC client, a
// v2 call beside a v1 one): the JSON the REST gateway writes, with implicit values, without
// input-only fields, and every Timestamp with its millisecond fraction (`...:41.000Z` on a
// whole second, where protobuf-es's own toJson writes `...:41Z`: comparing served JSON with
// toJson failed whenever the clock landed on a whole second). test/json/message-json.test.ts
// holds this writer to protobuf-es's toJson, field by field.

const restJson = { alwaysEmitImplicit: true, omit: isInputOnly };

/** The JSON the API writes for `message` (a message of `desc`). */
export function apiJson(desc: DescMessage, message: Message): JsonObject {
  return JSON.parse(createJsonWriter(desc, restJson)(message)) as JsonObject;
}
