import {
  clone,
  create,
  type DescMessage,
  getOption,
  hasOption,
  isFieldSet,
  type Message,
  type MessageShape,
} from "@bufbuild/protobuf";
import { type ReflectMessage, reflect } from "@bufbuild/protobuf/reflect";
import type { FieldMask } from "@bufbuild/protobuf/wkt";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { invalidField } from "../errors.js";
import { checkUid, type Violations, violations } from "../validation/field-rules.js";

/** What an Update RPC may change, by proto field name. */
export interface MaskRules {
  /** Fields the caller may change. */
  mutable: readonly string[];
  /** Fields that are ignored when named (output only, the identifier). */
  ignored: readonly string[];
  /** Fields set at creation: ignored when given unchanged, refused when changed. */
  immutable: readonly string[];
}

/**
 * The update rules of a resource message, read from its fields' `google.api.field_behavior`
 * (AIP-203): `IDENTIFIER` and `OUTPUT_ONLY` fields are ignored, `IMMUTABLE` ones may be sent
 * back unchanged, every other field is mutable. Built once per message type, at module load.
 */
export function maskRulesOf(schema: DescMessage): MaskRules {
  const mutable: string[] = [];
  const ignored: string[] = [];
  const immutable: string[] = [];
  for (const field of schema.fields) {
    const behaviour = hasOption(field, field_behavior) ? getOption(field, field_behavior) : [];
    if (
      behaviour.includes(FieldBehavior.IDENTIFIER) ||
      behaviour.includes(FieldBehavior.OUTPUT_ONLY)
    ) {
      ignored.push(field.name);
    } else if (behaviour.includes(FieldBehavior.IMMUTABLE)) {
      immutable.push(field.name);
    } else {
      mutable.push(field.name);
    }
  }
  return { mutable, ignored, immutable };
}

/** What an Update handler starts from (see updateRequest). */
export interface UpdateRequest<Desc extends DescMessage> {
  /** The resource sent (an empty one when absent); its uid is a well-formed uid. */
  body: MessageShape<Desc>;
  /** The proto names of the fields to change (resolveMask). */
  fields: Set<string>;
  /** Collects the handler's own violations of the fields it changes. */
  v: Violations;
}

/**
 * The start every Update handler shares, built once per resource type: take the resource (an
 * empty one when absent), refuse a malformed uid, and resolve the mask with the rules read
 * from the message's field behaviour (maskRulesOf).
 */
export function updateRequest<Desc extends DescMessage>(
  schema: Desc,
): (resource: MessageShape<Desc> | undefined, mask: FieldMask | undefined) => UpdateRequest<Desc> {
  const rules = maskRulesOf(schema);
  return (resource, mask) => {
    const body = resource ?? create(schema);
    const v = violations();
    checkUid(v, "uid", String((body as { uid?: unknown }).uid ?? ""));
    v.throwIfAny();
    return { body, fields: resolveMask(schema, body, mask, rules), v };
  };
}

/**
 * Settle an `IMMUTABLE` field that resolveMask put in `fields`: when the value `given` differs
 * from the `stored` one, INVALID_ARGUMENT on `path`; the same value sent back (a GET answer
 * PATCHed back whole) is dropped from `fields`, so it changes nothing.
 */
export function settleImmutable(
  fields: Set<string>,
  name: string,
  given: unknown,
  stored: unknown,
  path: string,
): void {
  if (!fields.has(name)) return;
  if (given !== stored) {
    throw invalidField(path, "cannot change after creation; leave it out or send it unchanged");
  }
  fields.delete(name);
}

/**
 * Resolve an Update request's field mask into the set of fields to change (API.md "Update"):
 * no mask: the fields populated in `resource`; `*`: every mutable field (full replacement);
 * otherwise the named mutable fields. Output-only paths are ignored, unknown ones are
 * INVALID_ARGUMENT on `update_mask`. An immutable field is in the answer when named or (with
 * no mask or `*`) populated: the handler compares it with the stored value
 * (settleImmutable) and changes nothing else for it.
 *
 * A mask with no paths counts as no mask. Over REST the gateway always sends a mask made of
 * the JSON keys of the body when the caller gave none (so `{"description": ""}` clears the
 * description); an empty one therefore comes from a body with no keys (`{}` or no body),
 * whose populated fields are only the uid from the path: the update changes nothing and
 * answers the resource as it is.
 */
export function resolveMask<Desc extends DescMessage>(
  schema: Desc,
  resource: MessageShape<Desc>,
  mask: FieldMask | undefined,
  rules: MaskRules,
): Set<string> {
  const paths = mask?.paths ?? [];
  if (paths.length === 0) {
    return populated(schema, resource, [...rules.mutable, ...rules.immutable]);
  }
  if (paths.includes("*")) {
    if (paths.length > 1)
      throw invalidField("update_mask", "`*` cannot be combined with other paths");
    return new Set([...rules.mutable, ...populated(schema, resource, rules.immutable)]);
  }
  const out = new Set<string>();
  for (const path of paths) {
    // A nested path (oidc.client_id) changes its top-level field as a whole.
    const top = path.split(".")[0] ?? "";
    if (rules.mutable.includes(top) || rules.immutable.includes(top)) out.add(top);
    else if (!rules.ignored.includes(top)) {
      throw invalidField("update_mask", `unknown field path ${JSON.stringify(path)}`);
    }
  }
  return out;
}

/** The fields among `names` that are set in `resource`. */
function populated<Desc extends DescMessage>(
  schema: Desc,
  resource: MessageShape<Desc>,
  names: readonly string[],
): Set<string> {
  const present = new Set<string>();
  for (const name of names) {
    const field = schema.fields.find((f) => f.name === name);
    if (field && isFieldSet(resource, field)) present.add(name);
  }
  return present;
}

/**
 * The sub-field paths an update names inside the message field `top` (a proto field name):
 * with a mask, what follows `top.` in its paths (undefined when `top` itself or `*` is named:
 * the whole field changes); without a mask, the sub-fields populated in `value` (of type
 * `desc`), at any depth, so `{claimMatch: {subject: "x"}}` changes the subject alone. Over
 * REST the gateway sends the body's keys, at any depth, as the mask.
 */
export function subPaths(
  top: string,
  mask: FieldMask | undefined,
  desc: DescMessage,
  value: Message,
): string[] | undefined {
  const paths = mask?.paths ?? [];
  if (paths.length === 0) return populatedPaths(reflect(desc, value));
  if (paths.includes("*") || paths.includes(top)) return undefined;
  const prefix = `${top}.`;
  return paths.filter((p) => p.startsWith(prefix)).map((p) => p.slice(prefix.length));
}

/** The paths of the fields set in `r`, descending into plain (non-WKT) messages. */
function populatedPaths(r: ReflectMessage): string[] {
  const out: string[] = [];
  for (const field of r.fields) {
    if (!r.isSet(field)) continue;
    if (field.fieldKind === "message" && !field.message.typeName.startsWith("google.protobuf.")) {
      const inner = populatedPaths(r.get(field));
      out.push(...(inner.length > 0 ? inner.map((p) => `${field.name}.${p}`) : [field.name]));
    } else {
      out.push(field.name);
    }
  }
  return out;
}

/**
 * A copy of `base` (of type `desc`) in which the fields at `paths` (proto names, dotted into
 * sub-messages) take their value from `overlay`, set or cleared alike; every other field
 * keeps base's. An unknown path is INVALID_ARGUMENT on `update_mask`, shown under `prefix`.
 */
export function overlayPaths<Desc extends DescMessage>(
  desc: Desc,
  base: MessageShape<Desc>,
  overlay: MessageShape<Desc>,
  paths: readonly string[],
  prefix: string,
): MessageShape<Desc> {
  const out = clone(desc, base);
  const target = reflect(desc, out);
  const source = reflect(desc, overlay);
  for (const path of paths) copyPath(target, source, path.split("."), `${prefix}.${path}`);
  return out;
}

function copyPath(t: ReflectMessage, s: ReflectMessage, path: string[], full: string): void {
  const [name, ...rest] = path;
  const field = t.fields.find((f) => f.name === name);
  const unknown = () => invalidField("update_mask", `unknown field path ${JSON.stringify(full)}`);
  if (!field) throw unknown();
  if (rest.length > 0) {
    if (field.fieldKind !== "message") throw unknown();
    if (!t.isSet(field)) t.set(field, reflect(field.message, create(field.message)));
    const inner = s.isSet(field) ? s.get(field) : reflect(field.message, create(field.message));
    copyPath(t.get(field), inner, rest, full);
    return;
  }
  if (s.isSet(field)) t.set(field, s.get(field) as never);
  else t.clear(field);
}
