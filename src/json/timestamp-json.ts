import type { DescField, DescMessage, JsonValue } from "@bufbuild/protobuf";

// How messages look as JSON, for every path that writes JSON (REST, Connect JSON on the
// router and on the lean path): a neutral room, importing nothing from the paths above it.

/** Rewrites one JSON value of a field's type; returns the value to keep. */
type ValueFix = (v: JsonValue) => JsonValue;

const fixers = new WeakMap<DescMessage, ValueFix | null>();

/**
 * A function that rewrites every Timestamp in the JSON form of a `desc` message to carry a
 * millisecond fraction, as the API fixes the format (`2026-11-22T07:30:52.000Z`). protobuf-es
 * writes a time on a whole second without any fraction (`...:52Z`), which the proto3 JSON
 * mapping allows but the API does not. Built once per message type; objects are changed in
 * place. Messages without Timestamps below them cost one call.
 */
export function millisecondTimestamps(desc: DescMessage): (json: JsonValue) => JsonValue {
  return messageFix(desc) ?? ((json) => json);
}

/** As millisecondTimestamps, or undefined for a message type that holds no Timestamp. */
export function millisecondTimestampsIfAny(
  desc: DescMessage,
): ((json: JsonValue) => JsonValue) | undefined {
  return messageFix(desc);
}

function messageFix(desc: DescMessage, path = new Set<DescMessage>()): ValueFix | undefined {
  if (desc.typeName === "google.protobuf.Timestamp") return withMilliseconds;
  if (desc.typeName.startsWith("google.protobuf.")) return undefined;
  const known = fixers.get(desc);
  if (known !== undefined) return known ?? undefined;
  // A message that holds itself holds no Timestamp through that cycle that it does not also
  // hold directly.
  if (path.has(desc)) return undefined;
  path.add(desc);
  const fields: Array<{ name: string; fix: ValueFix }> = [];
  for (const field of desc.fields) {
    const fix = fieldFix(field, path);
    if (fix) fields.push({ name: field.jsonName, fix });
  }
  path.delete(desc);
  if (fields.length === 0) {
    fixers.set(desc, null);
    return undefined;
  }
  const fix: ValueFix = (json) => {
    if (json === null || typeof json !== "object" || Array.isArray(json)) return json;
    for (const f of fields) {
      const v = json[f.name];
      if (v !== undefined) json[f.name] = f.fix(v);
    }
    return json;
  };
  fixers.set(desc, fix);
  return fix;
}

function fieldFix(field: DescField, path: Set<DescMessage>): ValueFix | undefined {
  const message =
    field.fieldKind === "message"
      ? field.message
      : field.fieldKind === "list" && field.listKind === "message"
        ? field.message
        : field.fieldKind === "map" && field.mapKind === "message"
          ? field.message
          : undefined;
  const one = message && messageFix(message, path);
  if (!one) return undefined;
  if (field.fieldKind === "list") {
    return (v) => (Array.isArray(v) ? v.map(one) : v);
  }
  if (field.fieldKind === "map") {
    return (v) => {
      if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
      for (const k of Object.keys(v)) v[k] = one(v[k]!);
      return v;
    };
  }
  return one;
}

/** `...:52Z` becomes `...:52.000Z`; a value with a fraction is left as it is. */
function withMilliseconds(v: JsonValue): JsonValue {
  return typeof v === "string" && /:\d\dZ$/.test(v) ? `${v.slice(0, -1)}.000Z` : v;
}
