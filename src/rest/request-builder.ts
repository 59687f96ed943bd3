import { create, type JsonValue, type Message } from "@bufbuild/protobuf";
import { reflect } from "@bufbuild/protobuf/reflect";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { invalidField } from "../errors.js";
import { fieldNamed, setFromText } from "./field-path.js";
import type { RestRule } from "./http-rules.js";
import { isJsonObject, mergeJsonBody } from "./json-body.js";
import { variableValues } from "./path-template.js";
import { applyQuery, type QueryRules } from "./query-params.js";

/** The parts of an HTTP request a request message is built from. */
export interface RestRequestParts {
  /** The path segments the rule's template matched, not yet percent-decoded. */
  readonly segments: readonly string[];
  /** The query string without `?`; "" for none. */
  readonly query: string;
  /** The request body as text; "" for none. Its content type has been checked. */
  readonly body: string;
}

/** Build the request message of one rule from an HTTP request; throws INVALID_ARGUMENT. */
export type RequestBuilder = (parts: RestRequestParts) => Message;

/**
 * Create the request builder of a rule. The message is built in three layers, each allowed
 * to overwrite the one before: the body (protojson, unknown fields rejected, or ignored with
 * `lenient`, as are unknown query parameters; empty body = empty message), then query parameters (which may not touch fields bound by the path or the body),
 * then the path variables, so a uid in a PATCH body is replaced by the path's.
 *
 * Update over REST: when the rule's request has an `update_mask` and none was given, the mask
 * is made of the keys present in the body's JSON object (as proto field names, at any depth
 * of plain message fields), so `{"description": ""}` clears the description,
 * `{"claimMatch": {"subject": "x"}}` changes the subject alone, and `{}` changes nothing.
 */
export function createRequestBuilder(rule: RestRule, lenient = false): RequestBuilder {
  const schema = rule.method.input;
  const { body, updateMask, pathFields, template } = rule;
  const queryRules: QueryRules = {
    schema,
    pathBound: pathFields.map((p) => p.name),
    body,
    ignoreUnknown: lenient,
  };
  const bodyName = body.kind === "field" ? body.field.name : "body";
  const maskFrom =
    updateMask && body.kind === "field" && body.field.fieldKind === "message"
      ? body.field.message
      : undefined;

  return (parts) => {
    const message = create(schema);
    let json: JsonValue | undefined;
    if (parts.body !== "" && parts.body.trim() !== "") {
      if (body.kind === "none") {
        throw invalidField("body", `${rule.httpMethod} ${template.source} takes no request body`);
      }
      try {
        json = JSON.parse(parts.body) as JsonValue;
      } catch (err) {
        throw invalidField(bodyName, `malformed JSON: ${(err as Error).message}`);
      }
    }

    let bodyKeys: Set<string> | undefined;
    let maskPaths: string[] | undefined;
    if (json !== undefined) {
      if (body.kind === "all") {
        mergeJsonBody(schema, message, json, lenient);
        if (isJsonObject(json)) bodyKeys = protoNames(schema, json);
      } else if (body.kind === "field") {
        mergeJsonBody(schema, message, { [body.field.jsonName]: json }, lenient);
        if (maskFrom && isJsonObject(json)) {
          bodyKeys = protoNames(maskFrom, json);
          maskPaths = nestedPaths(maskFrom, json);
        }
      }
    }

    if (parts.query !== "") applyQuery(queryRules, message, parts.query, bodyKeys);

    if (updateMask && maskFrom) {
      const r = reflect(schema, message);
      if (!r.isSet(updateMask) && (bodyKeys || json === undefined)) {
        const mask = create(FieldMaskSchema, { paths: maskPaths ?? [] });
        r.set(updateMask, reflect(FieldMaskSchema, mask));
      }
    }

    if (pathFields.length > 0) {
      const values = variableValues(template, parts.segments);
      for (let k = 0; k < pathFields.length; k++) {
        const path = pathFields[k]!;
        const value = values[k];
        if (value === undefined)
          throw invalidField(path.name, "malformed percent-encoding in the path");
        setFromText(schema, message, path, value);
      }
    }
    return message;
  };
}

/**
 * The update mask a PATCH body implies: its keys as proto names, descending into the objects
 * of plain message fields (not well-known types, maps or lists), so that
 * `{"claimMatch": {"subject": "x"}}` names `claim_match.subject` alone. An empty object names
 * its field whole.
 */
function nestedPaths(
  schema: Parameters<typeof fieldNamed>[0],
  json: { [k: string]: JsonValue },
): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(json)) {
    const field = fieldNamed(schema, key);
    const name = field?.name ?? key;
    if (
      field?.fieldKind === "message" &&
      !field.message.typeName.startsWith("google.protobuf.") &&
      isJsonObject(value) &&
      Object.keys(value).length > 0
    ) {
      for (const sub of nestedPaths(field.message, value)) out.push(`${name}.${sub}`);
    } else {
      out.push(name);
    }
  }
  return out;
}

// The proto names of a JSON object's keys; the body has already been checked, so all exist.
function protoNames(
  schema: Parameters<typeof fieldNamed>[0],
  json: { [k: string]: JsonValue },
): Set<string> {
  const names = new Set<string>();
  for (const key of Object.keys(json)) names.add(fieldNamed(schema, key)?.name ?? key);
  return names;
}
