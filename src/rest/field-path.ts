import {
  create,
  type DescField,
  type DescMessage,
  fromJson,
  type Message,
  protoInt64,
  ScalarType,
} from "@bufbuild/protobuf";
import {
  protoSnakeCase,
  type ReflectList,
  type ReflectMessage,
  reflect,
} from "@bufbuild/protobuf/reflect";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { FieldMaskSchema, isWrapperDesc } from "@bufbuild/protobuf/wkt";
import { invalidField } from "../errors.js";

/** FieldPath is a resolved dotted field path: `uidp.descendants_of` as its fields. */
export interface FieldPath {
  /** The path in proto names, e.g. `uidp.descendants_of`; what errors name. */
  readonly name: string;
  /** The fields from the top-level message down to the leaf. */
  readonly fields: readonly DescField[];
}

const byProtoName = new WeakMap<DescMessage, Map<string, DescField>>();
const byAnyName = new WeakMap<DescMessage, Map<string, DescField>>();

/** The field of `schema` called `key` by its proto name or, unless protoOnly, its JSON name. */
export function fieldNamed(
  schema: DescMessage,
  key: string,
  protoOnly = false,
): DescField | undefined {
  const cache = protoOnly ? byProtoName : byAnyName;
  let index = cache.get(schema);
  if (!index) {
    index = new Map();
    for (const f of schema.fields) {
      index.set(f.name, f);
      if (!protoOnly) index.set(f.jsonName, f);
    }
    cache.set(schema, index);
  }
  return index.get(key);
}

/**
 * Resolve a dotted path of field names (each part by proto name or JSON name, so
 * `uidp.descendantsOf` works too) against `schema`. Every part but the last must be a
 * singular message field. Undefined when a part does not exist.
 */
export function resolveFieldPath(
  schema: DescMessage,
  dotted: string,
  protoOnly = false,
): FieldPath | undefined {
  const fields: DescField[] = [];
  let desc: DescMessage | undefined = schema;
  for (const part of dotted.split(".")) {
    if (!desc) return undefined;
    const field = fieldNamed(desc, part, protoOnly);
    if (!field) return undefined;
    fields.push(field);
    desc = field.fieldKind === "message" ? field.message : undefined;
  }
  return { name: fields.map((f) => f.name).join("."), fields };
}

/** Whether a field can take its value from text (a path segment or a query parameter). */
export function isTextSettable(field: DescField, allowRepeated: boolean): boolean {
  switch (field.fieldKind) {
    case "scalar":
    case "enum":
      return true;
    case "list":
      return allowRepeated && field.listKind !== "message";
    case "message":
      return isTextMessage(field.message);
    default:
      return false;
  }
}

// Well-known types whose JSON form is a single string or number.
function isTextMessage(desc: DescMessage): boolean {
  switch (desc.typeName) {
    case "google.protobuf.FieldMask":
    case "google.protobuf.Timestamp":
    case "google.protobuf.Duration":
      return true;
    default:
      return isWrapperDesc(desc);
  }
}

/**
 * Set the field at `path` in `target` from its text form: decimal integers (int64 too),
 * `true`/`false`, enum names or numbers, base64 bytes, FieldMask as a comma list (camelCase
 * paths become proto snake_case), Timestamp and Duration in their JSON form. A repeated field
 * gets the value appended. Intermediate messages are created as needed. Throws
 * INVALID_ARGUMENT naming `path.name` when the text is not a value of the field's type.
 */
export function setFromText(
  schema: DescMessage,
  target: Message,
  path: FieldPath,
  text: string,
): void {
  let r: ReflectMessage = reflect(schema, target);
  const { fields } = path;
  for (let k = 0; k < fields.length - 1; k++) {
    const f = fields[k]!;
    if (f.fieldKind !== "message") throw invalidField(path.name, "not a message field");
    let sub: ReflectMessage;
    if (r.isSet(f)) sub = r.get(f);
    else {
      sub = reflect(f.message);
      r.set(f, sub);
    }
    r = sub;
  }
  const leaf = fields[fields.length - 1]!;
  const fail = (why: string) => invalidField(path.name, why);
  switch (leaf.fieldKind) {
    case "scalar":
      r.set(leaf, parseScalar(leaf.scalar, text, leaf.longAsString, fail));
      return;
    case "enum":
      r.set(leaf, parseEnum(leaf.enum.values, text, fail));
      return;
    case "list": {
      const list = r.get(leaf) as ReflectList;
      if (leaf.listKind === "scalar") {
        list.add(parseScalar(leaf.scalar, text, leaf.longAsString, fail));
      } else if (leaf.listKind === "enum") {
        list.add(parseEnum(leaf.enum.values, text, fail));
      } else throw fail("cannot be set from text");
      return;
    }
    case "message":
      r.set(leaf, reflect(leaf.message, parseTextMessage(leaf.message, text, fail)));
      return;
    default:
      throw fail("cannot be set from text");
  }
}

const int32Range = { min: -(2 ** 31), max: 2 ** 31 - 1 };
const uint32Range = { min: 0, max: 2 ** 32 - 1 };
const int64Min = -(2n ** 63n);
const int64Max = 2n ** 63n - 1n;
const uint64Max = 2n ** 64n - 1n;
const decimal = /^-?[0-9]+$/;

function parseScalar(
  type: ScalarType,
  text: string,
  longAsString: boolean,
  fail: (why: string) => Error,
): unknown {
  switch (type) {
    case ScalarType.STRING:
      return text;
    case ScalarType.BOOL:
      if (text === "true" || text === "1") return true;
      if (text === "false" || text === "0") return false;
      throw fail(`expected true or false, got ${JSON.stringify(text)}`);
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
    case ScalarType.UINT32:
    case ScalarType.FIXED32: {
      const range =
        type === ScalarType.UINT32 || type === ScalarType.FIXED32 ? uint32Range : int32Range;
      const n = decimal.test(text) ? Number(text) : Number.NaN;
      if (!(n >= range.min && n <= range.max)) {
        throw fail(`expected an integer from ${range.min} to ${range.max}, got ${quote(text)}`);
      }
      return n;
    }
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
    case ScalarType.UINT64:
    case ScalarType.FIXED64: {
      const unsigned = type === ScalarType.UINT64 || type === ScalarType.FIXED64;
      const n = decimal.test(text) ? BigInt(text) : undefined;
      if (
        n === undefined ||
        n < (unsigned ? 0n : int64Min) ||
        n > (unsigned ? uint64Max : int64Max)
      ) {
        throw fail(`expected a 64-bit ${unsigned ? "unsigned " : ""}integer, got ${quote(text)}`);
      }
      const value = unsigned ? protoInt64.uParse(n) : protoInt64.parse(n);
      return longAsString ? String(value) : value;
    }
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE: {
      if (text === "NaN") return Number.NaN;
      if (text === "Infinity") return Number.POSITIVE_INFINITY;
      if (text === "-Infinity") return Number.NEGATIVE_INFINITY;
      const n = text.trim() === text && text !== "" ? Number(text) : Number.NaN;
      if (!Number.isFinite(n)) throw fail(`expected a number, got ${quote(text)}`);
      return n;
    }
    case ScalarType.BYTES:
      try {
        return base64Decode(text);
      } catch {
        throw fail("expected base64");
      }
  }
}

function parseEnum(
  values: readonly { name: string; number: number }[],
  text: string,
  fail: (why: string) => Error,
): number {
  const byName = values.find((v) => v.name === text);
  if (byName) return byName.number;
  if (decimal.test(text)) {
    const n = Number(text);
    if (n >= int32Range.min && n <= int32Range.max) return n;
  }
  throw fail(`expected one of ${values.map((v) => v.name).join(", ")}, got ${quote(text)}`);
}

function parseTextMessage(desc: DescMessage, text: string, fail: (why: string) => Error): Message {
  if (desc.typeName === FieldMaskSchema.typeName) {
    const paths = text
      .split(",")
      .map((p) => p.trim())
      .filter((p) => p !== "")
      .map((p) => (p === "*" ? p : p.split(".").map(protoSnakeCase).join(".")));
    return create(FieldMaskSchema, { paths });
  }
  if (isWrapperDesc(desc)) {
    const value = desc.fields[0]!;
    if (value.fieldKind !== "scalar") throw fail("unsupported wrapper");
    return create(desc, { value: parseScalar(value.scalar, text, false, fail) } as never);
  }
  try {
    return fromJson(desc, text);
  } catch {
    throw fail(`expected a ${desc.name} in its JSON form, got ${quote(text)}`);
  }
}

function quote(text: string): string {
  return JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text);
}
