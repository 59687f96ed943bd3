import {
  type DescField,
  type DescMessage,
  getOption,
  type JsonObject,
  type JsonValue,
} from "@bufbuild/protobuf";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";

/** Whether a field is marked `INPUT_ONLY`: a response never shows it. */
export function isInputOnly(field: DescField): boolean {
  return getOption(field, field_behavior).includes(FieldBehavior.INPUT_ONLY);
}

/** Removes, in place, what a response's JSON must not show. */
export type OutputPruner = (json: JsonValue) => void;

/**
 * Build, once per response type, a pruner that deletes the JSON keys of fields marked
 * `INPUT_ONLY` (a client secret, a binding's identityUid) at any depth. REST responses emit
 * implicit values (`alwaysEmitImplicit`), so without it an input-only field would appear as
 * `""`. Undefined when the type can hold no such field: nothing runs per request then.
 */
export function createOutputPruner(desc: DescMessage): OutputPruner | undefined {
  return build(desc, new Map());
}

function build(
  desc: DescMessage,
  seen: Map<string, OutputPruner | undefined>,
): OutputPruner | undefined {
  if (seen.has(desc.typeName)) return seen.get(desc.typeName);
  // Recursive types: a cycle sees "nothing to prune" for its inner occurrence.
  seen.set(desc.typeName, undefined);
  const drop: string[] = [];
  const nested: [jsonName: string, prune: OutputPruner, isMap: boolean][] = [];
  for (const field of desc.fields) {
    if (getOption(field, field_behavior).includes(FieldBehavior.INPUT_ONLY)) {
      drop.push(field.jsonName);
      continue;
    }
    const inner =
      field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message")
        ? build(field.message, seen)
        : field.fieldKind === "map" && field.mapKind === "message"
          ? build(field.message, seen)
          : undefined;
    if (inner) nested.push([field.jsonName, inner, field.fieldKind === "map"]);
  }
  if (drop.length === 0 && nested.length === 0) return undefined;
  const prune: OutputPruner = (json) => {
    if (Array.isArray(json)) {
      for (const item of json) prune(item);
      return;
    }
    if (json === null || typeof json !== "object") return;
    const obj = json as JsonObject;
    for (const key of drop) delete obj[key];
    for (const [key, inner, isMap] of nested) {
      const value = obj[key];
      if (value === undefined || value === null) continue;
      if (isMap) for (const v of Object.values(value as JsonObject)) inner(v);
      else inner(value);
    }
  };
  seen.set(desc.typeName, prune);
  return prune;
}
