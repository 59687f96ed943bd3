import {
  create,
  type DescMessage,
  fromJson,
  type JsonValue,
  type Message,
  mergeFromJson,
} from "@bufbuild/protobuf";
import { hasCustomJsonRepresentation } from "@bufbuild/protobuf/wkt";
import { type FieldViolation, invalidArgument } from "../errors.js";
import { refuseProtoKeyInJson } from "../validation/string-rules.js";
import { fieldNamed } from "./field-path.js";

/**
 * Merge a parsed JSON value into `target` as protojson (unknown fields rejected, or ignored
 * with `ignoreUnknownFields`). On failure,
 * throw INVALID_ARGUMENT whose BadRequest names the failing field by its proto path from
 * `schema` (`group.name`, `group.foo` for an unknown key, `events[2].type`). The precise
 * field is looked for only after the fast path has failed.
 */
export function mergeJsonBody(
  schema: DescMessage,
  target: Message,
  json: JsonValue,
  ignoreUnknownFields = false,
): void {
  // A map key `__proto__` (a claim) is refused, not dropped without a word.
  refuseProtoKeyInJson(json);
  try {
    mergeFromJson(schema, target, json, { ignoreUnknownFields });
  } catch (err) {
    throw invalidArgument([
      (ignoreUnknownFields ? undefined : locate(schema, json, "")) ?? {
        field: "body",
        description: reason(err),
      },
    ]);
  }
}

/** Whether a JSON value is an object (not null, not an array). */
export function isJsonObject(json: unknown): json is { [k: string]: JsonValue } {
  return typeof json === "object" && json !== null && !Array.isArray(json);
}

// Find the first field of `json` that `desc` refuses, descending into plain messages.
function locate(desc: DescMessage, json: JsonValue, prefix: string): FieldViolation | undefined {
  if (!isJsonObject(json)) {
    return { field: prefix || "body", description: `expected a JSON object, got ${kindOf(json)}` };
  }
  for (const key of Object.keys(json)) {
    const value = json[key]!;
    const field = fieldNamed(desc, key);
    const path = prefix ? `${prefix}.${field?.name ?? key}` : (field?.name ?? key);
    if (!field) return { field: path, description: "unknown field" };
    try {
      mergeFromJson(desc, create(desc), { [key]: value });
    } catch (err) {
      if (field.fieldKind === "message" && plain(field.message) && value !== null) {
        return locate(field.message, value, path);
      }
      if (field.fieldKind === "list" && field.listKind === "message" && plain(field.message)) {
        if (Array.isArray(value)) {
          for (const [i, item] of value.entries()) {
            try {
              fromJson(field.message, item);
            } catch {
              return locate(field.message, item, `${path}[${i}]`);
            }
          }
        }
      }
      return { field: path, description: reason(err) };
    }
  }
  return undefined;
}

const plain = (desc: DescMessage) => !hasCustomJsonRepresentation(desc);

// protobuf-es says "cannot decode field x.Y.z from JSON: expected string, got 123".
function reason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/^cannot decode (?:field|message) \S+ from JSON:? ?/, "") || "invalid";
}

function kindOf(json: JsonValue): string {
  if (json === null) return "null";
  if (Array.isArray(json)) return "an array";
  return `a ${typeof json}`;
}
