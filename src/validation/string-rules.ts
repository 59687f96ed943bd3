import type { DescMessage, JsonValue, Message } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { type FieldViolation, invalidArgument } from "../errors.js";
import { forEachString } from "./message-strings.js";

/**
 * Create the interceptor that refuses a NUL character (U+0000) in any string of a request,
 * nested messages and map keys included, as INVALID_ARGUMENT naming every field. PostgreSQL
 * text cannot hold one (it was stored on one backend and refused on the other, or kept in
 * JSON as an escape): refused here, before any service, every backend answers the same.
 */
export function createNulGate(): Interceptor {
  return (next) => async (req) => {
    if (!req.stream) {
      const found: FieldViolation[] = [];
      forEachString(req.method.input, req.message as Message, (path, value) => {
        if (value.includes("\u0000")) {
          found.push({
            field: asServicesName(req.method.input, path),
            description: "may not contain the NUL character",
          });
        }
      });
      if (found.length > 0) throw invalidArgument(found);
    }
    return next(req);
  };
}

/**
 * A request path as the services name fields in their violations: within the resource a
 * Create or Update carries (`oidc.clientId`, not `identityProvider.oidc.clientId`), else
 * from the request (`parent`, `query`).
 */
function asServicesName(input: DescMessage, path: string): string {
  const dot = path.indexOf(".");
  if (dot < 0) return path;
  const first = input.fields.find((f) => f.jsonName === path.slice(0, dot));
  return first?.fieldKind === "message" ? path.slice(dot + 1) : path;
}

const protoKey = "__proto__";
const protoKeyBytes = Buffer.from(protoKey);
const protoKeyRefused = (field: string) =>
  invalidArgument([
    { field, description: `"${protoKey}" is not accepted as a key (it names no field or claim)` },
  ]);

/**
 * Refuse a binary request that had a map entry keyed `__proto__`: decoding assigns map
 * entries to a plain object, where that key sets nothing, so the entry (a claim an identity
 * must present) would vanish without a word. Strings in a binary message are raw UTF-8, so
 * a dropped key shows as one more `__proto__` in the bytes than in the decoded strings.
 */
export function refuseDroppedProtoKey(schema: DescMessage, message: Message, bytes: Uint8Array) {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let raw = 0;
  for (let at = buf.indexOf(protoKeyBytes); at >= 0; at = buf.indexOf(protoKeyBytes, at + 1)) raw++;
  if (raw === 0) return;
  let kept = 0;
  forEachString(schema, message, (_field, value) => {
    for (let at = value.indexOf(protoKey); at >= 0; at = value.indexOf(protoKey, at + 1)) kept++;
  });
  if (raw > kept) throw protoKeyRefused("request");
}

/**
 * Refuse a JSON request (its text as received) with an object key `__proto__` anywhere: no
 * API field has that name, and as a map key (a claim) decoding would drop it without a word.
 * Most requests have no `__proto__` and no escape, and are not parsed twice.
 */
export function refuseProtoKeyInJsonText(text: Uint8Array): void {
  const s = Buffer.from(text.buffer, text.byteOffset, text.byteLength).toString("utf8");
  if (!s.includes(protoKey) && !s.includes("\\u")) return;
  let value: JsonValue;
  try {
    value = JSON.parse(s) as JsonValue;
  } catch {
    return; // the decoder refuses it in its own words
  }
  refuseProtoKeyInJson(value);
}

/** Refuse a parsed JSON request with an object key `__proto__` anywhere (see above). */
export function refuseProtoKeyInJson(json: JsonValue): void {
  const path = protoKeyPath(json, "");
  if (path !== undefined) throw protoKeyRefused(path);
}

/**
 * The path of a `__proto__` key in `json`: depth first, an object's own keys before what its
 * values hold. A loop over a stack of its own, not recursion: a request body is nested as deep
 * as its bytes allow (JSON.parse reads any depth), and 3,346 levels of `{"group":` in a 33 kB
 * REST body overflowed the call stack here, a 500 for a client's mistake (found by
 * test/reliability/bad-input.test.ts; test/iam/input-rules.test.ts sends 50,000).
 */
function protoKeyPath(json: JsonValue, prefix: string): string | undefined {
  const stack: [JsonValue, string][] = [[json, prefix]];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [value, at] = top;
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i]!, `${at}[${i}]`]);
    } else if (typeof value === "object" && value !== null) {
      const keys = Object.keys(value);
      // This object's own keys are looked at before anything inside its values.
      for (const key of keys) if (key === protoKey) return at ? `${at}.${key}` : key;
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!;
        stack.push([value[key]!, at ? `${at}.${key}` : key]);
      }
    }
  }
  return undefined;
}
