import {
  type DescEnum,
  type DescField,
  type DescMessage,
  type Message,
  ScalarType,
  toJson,
} from "@bufbuild/protobuf";
import { isScalarZeroValue } from "@bufbuild/protobuf/reflect";
import { base64Encode } from "@bufbuild/protobuf/wire";
import { isWrapperDesc } from "@bufbuild/protobuf/wkt";

// How messages are written as JSON by every path that writes them itself (REST, the lean
// Connect path): a neutral room, importing nothing from the paths above it.
//
// protobuf-es's toJson walks a message by reflection on every call (a reflect wrapper per
// message, a Set and closures per field, a JSON value tree that JSON.stringify walks again);
// a writer here is built once per message type and writes the text directly. Its output is
// byte for byte `JSON.stringify(toJson(desc, message, options))`, but for Timestamps, which
// always carry at least a millisecond fraction (`...:52.000Z`, the API's format; protobuf-es
// writes a whole second as `...:52Z`), and for the fields `omit` names, which are left out
// (test/json/message-json.test.ts holds the two side by side over every response type).

/** Options of a JSON writer. */
export interface JsonWriterOptions {
  /** protobuf-es's option: write fields with implicit presence even when they are zero. */
  readonly alwaysEmitImplicit?: boolean;
  /** Fields never written, at any depth (REST's INPUT_ONLY fields). */
  readonly omit?: (field: DescField) => boolean;
}

/** The options of the Connect protocol's JSON (connect-es's defaults): zero values left out. */
export const connectJson: JsonWriterOptions = {};

/** Writes one message of a type as JSON text. */
export type JsonWriter = (message: Message) => string;

/** A field's value, or skip: the field is not written. */
const skip = Symbol("skip");
type Get = (message: Record<string, unknown>) => unknown;
type Write = (value: unknown) => string;

interface Plan {
  /** `"jsonName":` */
  readonly key: string;
  readonly get: Get;
  readonly write: Write;
}

/** Writers built so far, by options object and message type. */
const built = new WeakMap<JsonWriterOptions, WeakMap<DescMessage, Write>>();
const noOptions: JsonWriterOptions = {};

/**
 * The JSON writer of a message type with `options` (pass the same options object each time:
 * writers are kept per options object). Built once; recursive types are fine.
 */
export function createJsonWriter(
  desc: DescMessage,
  options: JsonWriterOptions = noOptions,
): JsonWriter {
  return messageWriter(desc, options) as JsonWriter;
}

/**
 * A writer of one field of a message type (REST's `response_body`): the field's JSON, or
 * `null` when the message does not set it (what protobuf-es's JSON would hold there: nothing).
 */
export function createFieldJsonWriter(
  field: DescField,
  options: JsonWriterOptions = noOptions,
): JsonWriter {
  const plan = fieldPlan(field, options);
  return (message) => {
    const v = plan.get(message as unknown as Record<string, unknown>);
    return v === skip ? "null" : plan.write(v);
  };
}

function messageWriter(desc: DescMessage, options: JsonWriterOptions): Write {
  let byType = built.get(options);
  if (!byType) {
    byType = new WeakMap();
    built.set(options, byType);
  }
  const known = byType.get(desc);
  if (known) return known;
  const special = wellKnown(desc);
  if (special) {
    byType.set(desc, special);
    return special;
  }
  // Set before the fields are planned: a type that holds itself finds its own writer.
  const plans: Plan[] = [];
  const write: Write = (value) => {
    const m = value as Record<string, unknown>;
    let out = "{";
    for (let i = 0; i < plans.length; i++) {
      const p = plans[i]!;
      const v = p.get(m);
      if (v === skip) continue;
      out += out.length === 1 ? p.key : `,${p.key}`;
      out += p.write(v);
    }
    return `${out}}`;
  };
  byType.set(desc, write);
  // protobuf-es writes fields in the order of their numbers.
  const fields = [...desc.fields].sort((a, b) => a.number - b.number);
  for (const field of fields) {
    if (options.omit?.(field)) continue;
    plans.push(fieldPlan(field, options));
  }
  return write;
}

/** Whether a field has implicit presence (proto3 without `optional`), as protobuf-es tells it. */
const IMPLICIT = 2;

function fieldPlan(field: DescField, options: JsonWriterOptions): Plan {
  const key = `${JSON.stringify(field.jsonName)}:`;
  const name = field.localName;
  const emit = options.alwaysEmitImplicit === true && field.presence === IMPLICIT;
  let get: Get;
  if (field.oneof) {
    const group = field.oneof.localName;
    get = (m) => {
      const o = m[group] as { case: string | undefined; value: unknown };
      return o.case === name ? o.value : skip;
    };
  } else if (field.presence !== IMPLICIT) {
    get = (m) => {
      const v = m[name];
      return v !== undefined && Object.hasOwn(m, name) ? v : skip;
    };
  } else {
    switch (field.fieldKind) {
      case "list":
        get = (m) => {
          const v = m[name] as unknown[];
          return v.length > 0 || emit ? v : skip;
        };
        break;
      case "map":
        get = (m) => {
          const v = m[name] as object;
          return emit || Object.keys(v).length > 0 ? v : skip;
        };
        break;
      case "enum": {
        const zero = field.enum.values[0]!.number;
        get = (m) => {
          const v = m[name];
          return v !== zero || emit ? v : skip;
        };
        break;
      }
      case "scalar": {
        const scalar = field.scalar;
        get =
          scalar === ScalarType.STRING
            ? (m) => {
                const v = m[name];
                return v !== "" || emit ? v : skip;
              }
            : (m) => {
                const v = m[name];
                return emit || !isScalarZeroValue(scalar, v) ? v : skip;
              };
        break;
      }
      default:
        throw new Error(`${field}: a message field with implicit presence`);
    }
  }
  return { key, get, write: valueWriter(field, options) };
}

function valueWriter(field: DescField, options: JsonWriterOptions): Write {
  switch (field.fieldKind) {
    case "scalar":
      return scalarWriter(field.scalar);
    case "enum":
      return enumWriter(field.enum);
    case "message":
      // Types from wrappers.proto are unwrapped in a singular field outside a oneof, as
      // protobuf-es keeps them: the field holds the wrapped scalar.
      if (!field.oneof && isWrapperDesc(field.message)) {
        return scalarWriter(field.message.fields[0]!.scalar!);
      }
      return messageValue(field.message, options);
    case "list": {
      const item =
        field.listKind === "scalar"
          ? scalarWriter(field.scalar)
          : field.listKind === "enum"
            ? enumWriter(field.enum)
            : messageValue(field.message, options);
      return (v) => {
        const list = v as unknown[];
        let out = "[";
        for (let i = 0; i < list.length; i++) out += i === 0 ? item(list[i]) : `,${item(list[i])}`;
        return `${out}]`;
      };
    }
    case "map": {
      const item =
        field.mapKind === "scalar"
          ? scalarWriter(field.scalar)
          : field.mapKind === "enum"
            ? enumWriter(field.enum)
            : messageValue(field.message, options);
      // In the map object's own key order, which is the order of the object protobuf-es
      // builds (integer-like keys first): JSON.stringify writes that one in the same order.
      return (v) => {
        const map = v as Record<string, unknown>;
        let out = "{";
        for (const k in map) {
          out += `${out.length === 1 ? "" : ","}${JSON.stringify(k)}:${item(map[k])}`;
        }
        return `${out}}`;
      };
    }
  }
}

/**
 * A Struct's JSON object as protobuf-es writes it, which drops every `__proto__` key at any
 * depth (its Struct cannot hold one: the key is set on a plain object). JSON.parse makes such a
 * key an own property, so an event's data could hold one; written as held, a REST or Connect
 * caller would see what gRPC's binary answer drops. The replacer runs only when the key is
 * there.
 */
function structText(v: unknown): string {
  const text = JSON.stringify(v);
  return text.includes('"__proto__"') ? JSON.stringify(v, withoutProtoKeys) : text;
}

/** JSON.stringify's replacer leaving out `__proto__` keys. */
function withoutProtoKeys(key: string, value: unknown): unknown {
  return key === "__proto__" ? undefined : value;
}

/**
 * The writer of a message held in a field of a message that is not a well-known type. A
 * google.protobuf.Struct is held there as the JSON object it stands for (protobuf-es's
 * representation), written as JSON.stringify writes it: what protobuf-es writes of it.
 * Any other type's writer is found when first used (a type may hold itself).
 */
function messageValue(desc: DescMessage, options: JsonWriterOptions): Write {
  if (desc.typeName === "google.protobuf.Struct") return structText;
  let write: Write | undefined;
  return (v) => {
    write ??= messageWriter(desc, options);
    return write(v);
  };
}

function scalarWriter(scalar: ScalarType): Write {
  switch (scalar) {
    case ScalarType.STRING:
      return (v) => JSON.stringify(v);
    case ScalarType.BOOL:
      return (v) => (v ? "true" : "false");
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return (v) => `"${String(v)}"`;
    case ScalarType.BYTES:
      return (v) => `"${base64Encode(v as Uint8Array)}"`;
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE:
      return (v) => {
        const n = v as number;
        if (Number.isNaN(n)) return '"NaN"';
        if (n === Number.POSITIVE_INFINITY) return '"Infinity"';
        if (n === Number.NEGATIVE_INFINITY) return '"-Infinity"';
        return JSON.stringify(n);
      };
    default:
      return (v) => JSON.stringify(v);
  }
}

function enumWriter(desc: DescEnum): Write {
  if (desc.typeName === "google.protobuf.NullValue") return () => "null";
  return (v) => {
    const known = desc.value[v as number];
    return known ? JSON.stringify(known.name) : JSON.stringify(v);
  };
}

/**
 * The writers of the well-known types with a JSON form of their own: the Timestamp's with the
 * millisecond fraction; the others as protobuf-es writes them.
 */
function wellKnown(desc: DescMessage): Write | undefined {
  if (!desc.typeName.startsWith("google.protobuf.")) return undefined;
  switch (desc.typeName) {
    case "google.protobuf.Timestamp":
      return (v) => `"${timestampText(desc, v as { seconds: bigint; nanos: number })}"`;
    case "google.protobuf.Duration":
    case "google.protobuf.FieldMask":
    case "google.protobuf.Struct":
    case "google.protobuf.Value":
    case "google.protobuf.ListValue":
    case "google.protobuf.Any":
    case "google.protobuf.DoubleValue":
    case "google.protobuf.FloatValue":
    case "google.protobuf.Int64Value":
    case "google.protobuf.UInt64Value":
    case "google.protobuf.Int32Value":
    case "google.protobuf.UInt32Value":
    case "google.protobuf.BoolValue":
    case "google.protobuf.StringValue":
    case "google.protobuf.BytesValue":
      return (v) => JSON.stringify(toJson(desc, v as never));
    default:
      return undefined;
  }
}

/** The earliest and latest seconds a JSON Timestamp may hold (RFC 3339, years 1 to 9999). */
const minSeconds = Date.parse("0001-01-01T00:00:00Z") / 1000;
const maxSeconds = Date.parse("9999-12-31T23:59:59Z") / 1000;

/**
 * A Timestamp as RFC 3339 with 3, 6 or 9 fraction digits, as protobuf-es writes one with a
 * fraction, and `.000` for a whole second. Out of range, protobuf-es's own error.
 */
function timestampText(desc: DescMessage, ts: { seconds: bigint; nanos: number }): string {
  const seconds = Number(ts.seconds);
  const nanos = ts.nanos;
  if (!(seconds >= minSeconds && seconds <= maxSeconds) || nanos < 0 || nanos > 999_999_999) {
    toJson(desc, ts as never);
  }
  // toISOString always writes `.000Z` here: the seconds are whole.
  const iso = new Date(seconds * 1000).toISOString();
  if (nanos === 0) return iso;
  let fraction = String(nanos + 1_000_000_000).slice(1);
  if (fraction.endsWith("000000")) fraction = fraction.slice(0, 3);
  else if (fraction.endsWith("000")) fraction = fraction.slice(0, 6);
  return `${iso.slice(0, -4)}${fraction}Z`;
}
