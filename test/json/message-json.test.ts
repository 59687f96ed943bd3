import {
  create,
  type DescField,
  type DescMessage,
  getOption,
  type JsonWriteOptions,
  type Message,
  ScalarType,
  toJson,
} from "@bufbuild/protobuf";
import {
  DescriptorProtoSchema,
  DurationSchema,
  FileDescriptorSetSchema,
  isWrapperDesc,
  TimestampSchema,
  UninterpretedOptionSchema,
  ValueSchema,
} from "@bufbuild/protobuf/wkt";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EventSchema } from "../../gen/gatehouse/events/v2beta1/events_pb.js";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { createFieldJsonWriter, createJsonWriter } from "../../src/json/message-json.js";
import { millisecondTimestamps } from "../../src/json/timestamp-json.js";
import { createOutputPruner } from "../../src/rest/input-only.js";
import { apiServices } from "../../src/service-table.js";

// The JSON writer built once per message type (src/json/message-json.ts) against protobuf-es's
// reflective toJson, which it replaces on the paths that write JSON themselves: over every
// response type of the API (and descriptor.proto's, for what the API does not use: proto2
// presence, bytes, doubles, uint64), with every field populated at random, the writer's text
// is JSON.stringify(toJson(...)) with each Timestamp given its millisecond fraction, byte for
// byte; with REST's options too (implicit values emitted, input-only fields left out).

/** Every message type reachable from the API's responses, and descriptor.proto's. */
function responseTypes(): DescMessage[] {
  const seen = new Map<string, DescMessage>();
  const visit = (d: DescMessage) => {
    if (seen.has(d.typeName)) return;
    seen.set(d.typeName, d);
    for (const f of d.fields) {
      if (f.fieldKind === "message") visit(f.message);
      if (f.fieldKind === "list" && f.listKind === "message") visit(f.message);
      if (f.fieldKind === "map" && f.mapKind === "message") visit(f.message);
    }
  };
  for (const s of apiServices) for (const m of s.methods) visit(m.output);
  visit(FileDescriptorSetSchema);
  return [...seen.values()];
}

/**
 * fast-check's "binary" string unit (any code point but a lone surrogate), written out: the
 * same index drawn (nat up to 0x10FFFF less the 2,048 surrogates) and mapped to the same code
 * point, so the same strings from the same seed (checked over 20,000 samples), dangerous ones
 * ("__proto__") included. The built-in's inverse is a map of all 1.1 million code points,
 * built once a process: 2.4 s of the file's CPU; this one's is arithmetic.
 */
const surrogates = 0xe000 - 0xd800;
const binaryUnit = fc.nat({ max: 0x10ffff - surrogates }).map(
  (i) => String.fromCodePoint(i < 0xd800 ? i : i + surrogates),
  (s) => {
    const cp = typeof s === "string" ? s.codePointAt(0) : undefined;
    if (cp === undefined || String.fromCodePoint(cp) !== s || (cp >= 0xd800 && cp < 0xe000)) {
      throw new Error("not one code point");
    }
    return cp < 0xd800 ? cp : cp - surrogates;
  },
);

const int64Range = { min: -(2n ** 63n), max: 2n ** 63n - 1n };
const uint64Range = { min: 0n, max: 2n ** 64n - 1n };

/**
 * A scalar value of a type, zero often enough that implicit presence is exercised. Built once
 * a type: an arbitrary holds no state (what it draws comes from the run's random source), and
 * building fc.string's binary unit maps out every code point (with a fresh one for each of the
 * hundreds of string fields, 3 of the file's 13 s of CPU went to building arbitraries).
 */
const scalars = new Map<string, fc.Arbitrary<unknown>>();
function scalar(type: ScalarType, longAsString: boolean): fc.Arbitrary<unknown> {
  const key = `${type} ${longAsString}`;
  let hit = scalars.get(key);
  if (!hit) {
    hit = newScalar(type, longAsString);
    scalars.set(key, hit);
  }
  return hit;
}
function newScalar(type: ScalarType, longAsString: boolean): fc.Arbitrary<unknown> {
  const long = (a: fc.Arbitrary<bigint>) => (longAsString ? a.map(String) : a);
  const any = ((): fc.Arbitrary<unknown> => {
    switch (type) {
      case ScalarType.STRING:
        return fc.string({ unit: binaryUnit, maxLength: 12 });
      case ScalarType.BOOL:
        return fc.boolean();
      case ScalarType.BYTES:
        return fc.uint8Array({ maxLength: 10 });
      case ScalarType.DOUBLE:
        return fc.double();
      case ScalarType.FLOAT:
        return fc.float();
      case ScalarType.INT64:
      case ScalarType.SINT64:
      case ScalarType.SFIXED64:
        return long(fc.bigInt(int64Range));
      case ScalarType.UINT64:
      case ScalarType.FIXED64:
        return long(fc.bigInt(uint64Range));
      case ScalarType.UINT32:
      case ScalarType.FIXED32:
        return fc.nat(2 ** 32 - 1);
      default:
        return fc.integer();
    }
  })();
  return fc.oneof(
    { arbitrary: any, weight: 4 },
    { arbitrary: zeroOf(type, longAsString), weight: 1 },
  );
}

function zeroOf(type: ScalarType, longAsString: boolean): fc.Arbitrary<unknown> {
  switch (type) {
    case ScalarType.STRING:
      return fc.constant("");
    case ScalarType.BOOL:
      return fc.constant(false);
    case ScalarType.BYTES:
      return fc.constant(new Uint8Array(0));
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return fc.constant(longAsString ? "0" : 0n);
    default:
      return fc.constant(0);
  }
}

/** Whole seconds, milliseconds, microseconds and nanoseconds, over the whole range. */
const timestamp = fc
  .record({
    seconds: fc.bigInt({ min: -62135596800n, max: 253402300799n }),
    nanos: fc.oneof(
      fc.constant(0),
      fc.integer({ min: 0, max: 999 }).map((n) => n * 1_000_000),
      fc.integer({ min: 0, max: 999_999 }).map((n) => n * 1000),
      fc.integer({ min: 0, max: 999_999_999 }),
    ),
  })
  .map((t) => create(TimestampSchema, t));

const duration = fc
  .record({ seconds: fc.bigInt({ min: 0n, max: 315576000000n }), nanos: fc.nat(999_999_999) })
  .chain(({ seconds, nanos }) =>
    fc
      .boolean()
      .map((neg) =>
        create(DurationSchema, neg ? { seconds: -seconds, nanos: -nanos } : { seconds, nanos }),
      ),
  );

/** JSON values protobuf's Struct can hold (no -0, NaN or Infinity). */
const structJson = fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), {
  maxKeys: 4,
});

/** A message of `desc` with its fields populated at random, `depth` levels down. */
function message(desc: DescMessage, depth: number): fc.Arbitrary<Message> {
  switch (desc.typeName) {
    case "google.protobuf.Timestamp":
      return timestamp;
    case "google.protobuf.Duration":
      return duration;
    case "google.protobuf.Value":
      return fc.jsonValue({ maxDepth: 2 }).map((j) => valueMessage(viaText(j)));
  }
  // Deep enough: only what proto2 requires (descriptor.proto's UninterpretedOption.NamePart).
  if (depth > 3) {
    const required = desc.fields.filter((f) => f.presence === 3 && f.fieldKind === "scalar");
    const init = Object.fromEntries(
      required.map((f) => [f.localName, f.scalar === ScalarType.BOOL ? false : ""]),
    );
    return fc.constant(create(desc, init as never));
  }
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  const oneofs = new Set(desc.oneofs);
  for (const f of desc.fields) {
    if (f.oneof) continue;
    const v = fieldValue(f, depth);
    fields[f.localName] =
      (f.presence === 2 || f.presence === 3) && f.fieldKind !== "message"
        ? v
        : fc.option(v, { nil: undefined, freq: 4 });
  }
  for (const o of oneofs) {
    fields[o.localName] = fc.oneof(
      fc.constant({ case: undefined }),
      ...o.fields.map((f) => fieldValue(f, depth).map((value) => ({ case: f.localName, value }))),
    );
  }
  return fc.record(fields).map((init) => {
    const defined = Object.fromEntries(Object.entries(init).filter(([, v]) => v !== undefined));
    return create(desc, defined as never);
  });
}

function fieldValue(f: DescField, depth: number): fc.Arbitrary<unknown> {
  switch (f.fieldKind) {
    case "scalar":
      return scalar(f.scalar, f.longAsString);
    case "enum":
      return fc.oneof(
        { arbitrary: fc.constantFrom(...f.enum.values.map((v) => v.number)), weight: 5 },
        { arbitrary: fc.integer({ min: 1000, max: 2000 }), weight: 1 },
      );
    case "message":
      return messageField(f, f.message, depth, true);
    case "list": {
      const item =
        f.listKind === "scalar"
          ? scalar(f.scalar, f.longAsString)
          : f.listKind === "enum"
            ? fc.constantFrom(...f.enum.values.map((v) => v.number))
            : messageField(f, f.message, depth, false);
      return fc.array(item, { maxLength: 3 });
    }
    case "map": {
      const key = mapKey(f.mapKey);
      const value =
        f.mapKind === "scalar"
          ? scalar(f.scalar, false)
          : f.mapKind === "enum"
            ? fc.constantFrom(...f.enum.values.map((v) => v.number))
            : messageField(f, f.message, depth, false);
      return fc.dictionary(key, value, { maxKeys: 4 });
    }
  }
}

/**
 * A message in a field, as protobuf-es holds it there: a Struct as the JSON object it stands
 * for, a wrapper in a singular field outside a oneof as the scalar it wraps.
 */
function messageField(
  f: DescField,
  desc: DescMessage,
  depth: number,
  singular: boolean,
): fc.Arbitrary<unknown> {
  if (desc.typeName === "google.protobuf.Struct") return structJson.map(viaText);
  const inner = desc.fields[0];
  if (singular && !f.oneof && isWrapperDesc(desc) && inner?.fieldKind === "scalar") {
    return scalar(inner.scalar, inner.longAsString);
  }
  return message(desc, depth + 1);
}

/** JSON as it comes back from text (no -0). */
const viaText = <T>(j: T): T => JSON.parse(JSON.stringify(j)) as T;

/** Map keys as protobuf-es keeps them: strings, numbers written out, `true`/`false`. */
function mapKey(type: ScalarType): fc.Arbitrary<string> {
  switch (type) {
    case ScalarType.STRING:
      // Integer-like keys too: JSON objects put those first.
      return fc.oneof(fc.string({ maxLength: 6 }), fc.nat(99).map(String));
    case ScalarType.BOOL:
      return fc.boolean().map(String);
    default:
      return fc.integer({ min: -50, max: 50 }).map(String);
  }
}

function valueMessage(j: unknown): Message {
  return create(ValueSchema, { kind: kindOf(j) } as never);
}
function kindOf(j: unknown): unknown {
  if (j === null) return { case: "nullValue", value: 0 };
  if (typeof j === "number") return { case: "numberValue", value: j };
  if (typeof j === "string") return { case: "stringValue", value: j };
  if (typeof j === "boolean") return { case: "boolValue", value: j };
  if (Array.isArray(j)) return { case: "listValue", value: { values: j.map(valueMessage) } };
  return { case: "structValue", value: fromStructJson(j as Record<string, unknown>) };
}
function fromStructJson(j: Record<string, unknown>): { fields: Record<string, Message> } {
  return { fields: Object.fromEntries(Object.entries(j).map(([k, v]) => [k, valueMessage(v)])) };
}

/**
 * What the paths wrote before the writer: protobuf-es's JSON, Timestamps given milliseconds.
 * The pruner is built once a type, as the REST paths build it (building one for every sample
 * was a fifth of the file's CPU: it reads every field's options).
 */
const pruners = new Map<string, ReturnType<typeof createOutputPruner>>();
function expected(desc: DescMessage, m: Message, opts: Partial<JsonWriteOptions>, prune = false) {
  const json = millisecondTimestamps(desc)(toJson(desc, m as never, opts));
  if (prune) {
    if (!pruners.has(desc.typeName)) pruners.set(desc.typeName, createOutputPruner(desc));
    pruners.get(desc.typeName)?.(json);
  }
  return JSON.stringify(json);
}

const inputOnly = (f: DescField) => getOption(f, field_behavior).includes(FieldBehavior.INPUT_ONLY);
const connectOptions = {};
const restOptions = { alwaysEmitImplicit: true, omit: inputOnly };

describe("createJsonWriter", () => {
  const types = responseTypes();

  it("reaches every kind of field the writer knows", () => {
    const kinds = new Set<string>();
    for (const d of types) {
      for (const f of d.fields) {
        kinds.add(f.fieldKind);
        if (f.oneof) kinds.add("oneof");
        if (f.fieldKind === "message") kinds.add(f.message.typeName);
        if (f.fieldKind === "scalar") kinds.add(ScalarType[f.scalar]);
      }
    }
    expect([...kinds]).toEqual(
      expect.arrayContaining([
        "scalar",
        "enum",
        "message",
        "list",
        "map",
        "oneof",
        "google.protobuf.Timestamp",
        "google.protobuf.Duration",
        "google.protobuf.Struct",
        "INT64",
        "UINT64",
        "BYTES",
        "DOUBLE",
        "BOOL",
      ]),
    );
    expect(types.length).toBeGreaterThan(50);
  });

  it.each(types.map((d) => [d.typeName, d] as const))(
    "writes %s as protobuf-es does, with millisecond Timestamps",
    (_name, desc) => {
      const connect = createJsonWriter(desc, connectOptions);
      const rest = createJsonWriter(desc, restOptions);
      fc.assert(
        fc.property(message(desc, 0), (m) => {
          expect(connect(m)).toBe(expected(desc, m, {}));
          expect(rest(m)).toBe(expected(desc, m, { alwaysEmitImplicit: true }, true));
        }),
        { numRuns: 40 },
      );
    },
  );

  // The property above found it (seed 1359504845): JSON.parse makes a "__proto__" key an own
  // property, which a Struct written as held kept and protobuf-es (and gRPC's binary) drops.
  it("writes a Struct holding __proto__ keys as protobuf-es does, at any depth", () => {
    const data = JSON.parse('{"":[{"__proto__":0}],"__proto__":{"x":1},"a":"__proto__"}');
    const m = create(EventSchema, { data });
    const written = createJsonWriter(EventSchema, connectOptions)(m);
    expect(written).toBe(expected(EventSchema, m, {}));
    expect(JSON.parse(written).data).toEqual({ "": [{}], a: "__proto__" });
  });

  it("writes a whole-second Timestamp with .000 and keeps 3, 6 or 9 fraction digits", () => {
    const w = createJsonWriter(TimestampSchema);
    const at = (seconds: bigint, nanos: number) => w(create(TimestampSchema, { seconds, nanos }));
    expect(at(1_795_000_000n, 0)).toBe('"2026-11-18T11:06:40.000Z"');
    expect(at(1_795_000_000n, 120_000_000)).toBe('"2026-11-18T11:06:40.120Z"');
    expect(at(1_795_000_000n, 120_500_000)).toBe('"2026-11-18T11:06:40.120500Z"');
    expect(at(1_795_000_000n, 1)).toBe('"2026-11-18T11:06:40.000000001Z"');
    expect(() => at(253402300800n, 0)).toThrow(/9999-12-31T23:59:59Z/);
  });

  it("writes one field of a message, or null when it is not set (REST's response_body)", () => {
    const field = UninterpretedOptionSchema.fields.find((f) => f.name === "name")!;
    const w = createFieldJsonWriter(field, restOptions);
    expect(w(create(UninterpretedOptionSchema))).toBe("[]");
    const d = DescriptorProtoSchema.fields.find((f) => f.name === "options")!;
    expect(createFieldJsonWriter(d)(create(DescriptorProtoSchema))).toBe("null");
  });
});
