import {
  type DescField,
  type DescMessage,
  fromJson,
  getOption,
  type JsonValue,
  type MessageShape,
  ScalarType,
} from "@bufbuild/protobuf";
import { FieldBehavior, field_behavior } from "../../../gen/google/api/field_behavior_pb.js";
import { durationForms, parseDurationSeconds } from "../../duration.js";
import { CliError } from "../cli-io.js";

/** One command-line flag standing for one field of a request message. */
export interface FieldFlag {
  /** The flag without `--`: the proto path in kebab case, `claim-match.issuer`. */
  flag: string;
  /** The field's proto path, as an update mask names it: `claim_match.issuer`. */
  protoPath: string;
  /** The JSON names from the message root: ["claimMatch", "issuer"]. */
  jsonPath: string[];
  /** How a value is written: one value, several (repeat the flag), or key=value pairs. */
  shape: "single" | "list" | "map";
  /** What one value is, for parsing and for the help text. */
  type: string;
  required: boolean;
  field: DescField;
}

// Messages taken whole, as their JSON string form: a time, a duration, a field mask.
const stringMessages = new Set([
  "google.protobuf.Timestamp",
  "google.protobuf.Duration",
  "google.protobuf.FieldMask",
]);

/**
 * The flags of every settable field of `desc`, nested messages flattened into dotted flags.
 * Output-only fields are left out, and so is the identifier unless `keepIdentifier`.
 */
export function messageFlags(
  desc: DescMessage,
  opts: { keepIdentifier?: boolean } = {},
): FieldFlag[] {
  // Read from the descriptors once a process (the field options are decoded at each read):
  // the tests run the CLI in-process hundreds of times, each building every command's flags.
  const memo = opts.keepIdentifier ? withIdentifier : withoutIdentifier;
  let flags = memo.get(desc);
  if (!flags) {
    flags = flagsOf(desc, opts.keepIdentifier === true);
    memo.set(desc, flags);
  }
  return [...flags];
}

const withIdentifier = new WeakMap<DescMessage, readonly FieldFlag[]>();
const withoutIdentifier = new WeakMap<DescMessage, readonly FieldFlag[]>();

function flagsOf(desc: DescMessage, keepIdentifier: boolean): FieldFlag[] {
  const out: FieldFlag[] = [];
  const walk = (m: DescMessage, proto: string[], json: string[], depth: number) => {
    for (const field of m.fields) {
      const behavior = getOption(field, field_behavior);
      if (behavior.includes(FieldBehavior.OUTPUT_ONLY)) continue;
      if (behavior.includes(FieldBehavior.IDENTIFIER) && !keepIdentifier) continue;
      const protoPath = [...proto, field.name];
      const jsonPath = [...json, field.jsonName];
      const required = behavior.includes(FieldBehavior.REQUIRED);
      const flag = protoPath.map((p) => p.replaceAll("_", "-")).join(".");
      if (field.fieldKind === "message" && !stringMessages.has(field.message.typeName)) {
        if (depth < 3) walk(field.message, protoPath, jsonPath, depth + 1);
        continue;
      }
      out.push({
        flag,
        protoPath: protoPath.join("."),
        jsonPath,
        shape: field.fieldKind === "list" ? "list" : field.fieldKind === "map" ? "map" : "single",
        type: typeName(field),
        required,
        field,
      });
    }
  };
  walk(desc, [], [], 0);
  return out;
}

function typeName(field: DescField): string {
  switch (field.fieldKind) {
    case "enum":
      return field.enum.values.map((v) => v.name).join("|");
    case "message":
      return field.message.typeName.replace("google.protobuf.", "").toLowerCase();
    case "scalar":
    case "list":
    case "map": {
      const scalar =
        field.fieldKind === "scalar"
          ? field.scalar
          : field.fieldKind === "list" && field.listKind === "scalar"
            ? field.scalar
            : field.fieldKind === "map" && field.mapKind === "scalar"
              ? field.scalar
              : undefined;
      if (scalar === undefined) return "value";
      if (scalar === ScalarType.BOOL) return "true|false";
      if (scalar === ScalarType.STRING) return "text";
      return "number";
    }
  }
}

/**
 * Build a message from flag values (strings, or string lists for repeated flags) through
 * protobuf JSON, so that enums go by name, durations as `5d`, `12h`, `30m`, `3600s` or plain
 * seconds (src/duration.ts), times as RFC 3339. A value
 * that does not fit is a usage error naming the flag.
 */
export function messageFromFlags<D extends DescMessage>(
  desc: D,
  flags: readonly FieldFlag[],
  values: ReadonlyMap<string, string | string[]>,
  base: Record<string, JsonValue> = {},
): MessageShape<D> {
  const json: Record<string, JsonValue> = structuredClone(base);
  for (const f of flags) {
    const raw = values.get(f.flag);
    if (raw === undefined) continue;
    const list = Array.isArray(raw) ? raw : [raw];
    let value: JsonValue;
    if (f.shape === "list") value = list.map((v) => scalarJson(f, v));
    else if (f.shape === "map") {
      const obj: Record<string, JsonValue> = {};
      for (const pair of list) {
        const eq = pair.indexOf("=");
        if (eq <= 0)
          throw new CliError(`--${f.flag}: expected key=value, got ${JSON.stringify(pair)}`);
        obj[pair.slice(0, eq)] = scalarJson(f, pair.slice(eq + 1));
      }
      value = obj;
    } else {
      if (list.length > 1) throw new CliError(`--${f.flag} is given more than once`);
      value = scalarJson(f, list[0] as string);
    }
    let at = json;
    for (const key of f.jsonPath.slice(0, -1)) {
      const next = at[key];
      at[key] = typeof next === "object" && next !== null && !Array.isArray(next) ? next : {};
      at = at[key] as Record<string, JsonValue>;
    }
    at[f.jsonPath[f.jsonPath.length - 1] as string] = value;
  }
  try {
    return fromJson(desc, json, { ignoreUnknownFields: false });
  } catch (err) {
    const named = flags.find((f) => (err as Error).message.includes(f.field.name));
    throw new CliError(
      `${named ? `--${named.flag}: ` : ""}${(err as Error).message.replace(/^cannot decode [^:]*: /, "")}`,
    );
  }
}

function scalarJson(f: FieldFlag, v: string): JsonValue {
  if (f.field.fieldKind === "list" && f.field.listKind === "message") {
    // A repeated message (a batch's requests): each value is one item as protobuf JSON.
    try {
      return JSON.parse(v) as JsonValue;
    } catch {
      throw new CliError(`--${f.flag}: expected one item as JSON, got ${JSON.stringify(v)}`);
    }
  }
  if (f.type === "duration") {
    // The same forms as every other duration (5d, 12h, ...), sent as protobuf JSON seconds.
    const seconds = parseDurationSeconds(v);
    if (seconds === undefined) {
      throw new CliError(`--${f.flag}: not a duration: ${JSON.stringify(v)} (${durationForms})`);
    }
    return `${seconds}s`;
  }
  if (f.type === "true|false") {
    if (v === "true" || v === "false") return v === "true";
    throw new CliError(`--${f.flag}: expected true or false, got ${JSON.stringify(v)}`);
  }
  if (f.type === "number") {
    if (!/^-?\d+(\.\d+)?$/.test(v))
      throw new CliError(`--${f.flag}: not a number: ${JSON.stringify(v)}`);
    return Number(v);
  }
  return v;
}
