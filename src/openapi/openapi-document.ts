import {
  type DescEnum,
  type DescField,
  type DescMessage,
  type DescService,
  getOption,
  hasOption,
  ScalarType,
} from "@bufbuild/protobuf";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { ruleOf } from "../auth/policy.js";
import { compileHttpRules, type RestRule } from "../rest/http-rules.js";

/** A JSON value of the document. */
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** Options of buildOpenApiDocument. */
export interface OpenApiOptions {
  /** The services served over REST: every google.api.http binding becomes an operation. */
  services: readonly DescService[];
  /** The document's info.version (the package's version). */
  version: string;
  /** The server URL clients call (the base URL). */
  serverUrl: string;
}

/**
 * The extension set on a path parameter bound to a multi-segment variable (`{uid=**}`): its
 * value is written into the path unescaped, slashes and all, like RFC 6570's reserved
 * expansion `{+uid}`. OpenAPI has no standard way to say so (`allowReserved` is for query
 * parameters only), and the gateway, as google.api.http requires, does not decode `%2F`
 * inside such a variable: a client that encodes the slashes names no resource.
 */
export const reservedExpansion = "x-gatehouse-reserved-expansion";

/**
 * Build the OpenAPI 3.1 document of the REST API from the protobuf descriptors and their
 * google.api.http rules (the same rules the REST gateway routes by), once at start-up: every
 * binding is an operation with its path and query parameters, request and response bodies
 * (proto3 JSON mapping), the google.rpc.Status error body, and the bearer scheme unless the
 * RPC is public. Field behaviours become `required` (REQUIRED) and `readOnly` (OUTPUT_ONLY).
 * Its parts are shared by every caller with the same services and version: read it, never
 * change it.
 */
export function buildOpenApiDocument(opts: OpenApiOptions): JsonObject {
  // Built once a process for each set of services and version, only its `servers` for each
  // call: a process that starts many servers (the tests start hundreds, each on a port, so a
  // URL, of its own) built the same paths and schemas for each, about 15-30 ms a start.
  let byVersion = built.get(opts.services);
  if (!byVersion) {
    byVersion = new Map();
    built.set(opts.services, byVersion);
  }
  let shared = byVersion.get(opts.version);
  if (!shared) {
    shared = buildDocument(opts);
    byVersion.set(opts.version, shared);
  }
  // The same keys in the same order (a spread keeps `servers` where it was), this URL's.
  return { ...shared, servers: [{ url: opts.serverUrl }] };
}

const built = new WeakMap<readonly DescService[], Map<string, JsonObject>>();

function buildDocument(opts: OpenApiOptions): JsonObject {
  const schemas: Record<string, JsonObject> = { "google.rpc.Status": statusSchema };
  const ref = (m: DescMessage): JsonObject => {
    addMessage(m, schemas);
    return wellKnown[m.typeName] ?? { $ref: `#/components/schemas/${m.typeName}` };
  };
  const paths: Record<string, JsonObject> = {};
  const tags: JsonObject[] = [];
  for (const service of opts.services) {
    const rules = compileHttpRules([service]);
    if (rules.length === 0) continue;
    tags.push({ name: service.name, description: `\`${service.typeName}\`` });
    // A method's additional bindings get operationIds of their own: `_1`, `_2`...
    const bindings = new Map<string, number>();
    for (const rule of rules) {
      const n = bindings.get(rule.rpc) ?? 0;
      bindings.set(rule.rpc, n + 1);
      const { path, params } = openApiPath(rule);
      const op = operation(rule, params, ref, n === 0 ? "" : `_${n}`);
      const item = paths[path] ?? {};
      item[rule.httpMethod.toLowerCase()] = op;
      paths[path] = item;
    }
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Gatehouse REST API",
      version: opts.version,
      description:
        "Generated from the protobuf descriptors and their google.api.http rules. Every RPC " +
        "is also served over gRPC, gRPC-Web and Connect. A path parameter marked " +
        `\`${reservedExpansion}\` (a uid) is written with its slashes unescaped.`,
    },
    servers: [{ url: opts.serverUrl }],
    tags,
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description: "A Gatehouse token (`gatehouse token mint`, or the STS exchange).",
        },
      },
      responses: {
        Error: {
          description: "An error: google.rpc.Status, ErrorInfo first among its details.",
          content: {
            "application/json": { schema: { $ref: "#/components/schemas/google.rpc.Status" } },
          },
        },
      },
    },
  };
}

/** The OpenAPI path of a rule (`{field}` per variable, `:verb` kept) and its path parameters. */
function openApiPath(rule: RestRule): { path: string; params: JsonObject[] } {
  const { segments, variables, verb } = rule.template;
  const parts: string[] = [];
  const params: JsonObject[] = [];
  for (let i = 0; i < segments.length; ) {
    const v = variables.findIndex((x) => x.start === i);
    if (v >= 0) {
      const variable = variables[v]!;
      const field = rule.pathFields[v]!;
      const end = variable.end < 0 ? segments.length : variable.end;
      const multi = variable.end < 0 || end - variable.start > 1;
      parts.push(`{${variable.fieldPath}}`);
      const leaf = field.fields[field.fields.length - 1]!;
      params.push({
        name: variable.fieldPath,
        in: "path",
        required: true,
        schema: multi ? { type: "string", pattern: uidPattern } : fieldSchema(leaf, () => ({})),
        description: multi
          ? "A uid: sent as is, its slashes unescaped (a child group's uid has several " +
            "segments). `%2F` is not decoded here."
          : `Sets \`${variable.fieldPath}\`.`,
        ...(multi ? { [reservedExpansion]: true } : {}),
      });
      i = end;
      continue;
    }
    const s = segments[i]!;
    parts.push(s.kind === "literal" ? s.value : s.kind === "wildcard" ? "{_segment}" : "{_rest}");
    i++;
  }
  return { path: `/${parts.join("/")}${verb === "" ? "" : `:${verb}`}`, params };
}

// uidp: a 40-hex root, then 16-hex segments (src/uid.ts).
const uidPattern = "^[0-9a-f]{40}(/[0-9a-f]{16})*$";

function operation(
  rule: RestRule,
  pathParams: JsonObject[],
  ref: (m: DescMessage) => JsonObject,
  suffix: string,
): JsonObject {
  const input = rule.method.input;
  const bound = new Set(rule.pathFields.map((f) => f.fields[0]!.name));
  const params = [...pathParams];
  if (rule.body.kind !== "all") {
    for (const f of input.fields) {
      if (bound.has(f.name)) continue;
      if (rule.body.kind === "field" && rule.body.field.name === f.name) continue;
      params.push(...queryParams(f, f.name, ref));
    }
  }
  const op: JsonObject = {
    operationId: `${rule.service.name}_${rule.method.name}${suffix}`,
    summary: `${rule.service.name}.${rule.method.name}`,
    description: `\`${rule.rpc}\` over REST.`,
    tags: [rule.service.name],
    parameters: params,
    responses: {
      "200": {
        description: "OK",
        content: {
          "application/json": {
            schema: rule.responseBody
              ? fieldSchema(rule.responseBody, ref)
              : ref(rule.method.output),
          },
        },
      },
      default: { $ref: "#/components/responses/Error" },
    },
  };
  if (rule.body.kind !== "none") {
    const schema = rule.body.kind === "all" ? ref(input) : fieldSchema(rule.body.field, ref);
    op.requestBody = {
      required: true,
      content: { "application/json": { schema } },
    };
  }
  if (ruleOf(rule.rpc)?.kind === "public") op.security = [];
  else op.security = [{ bearer: [] }];
  return op;
}

/**
 * The query parameters a field gives (http.proto: scalars, enums and repeated ones by their
 * proto name; a singular message field's own fields as `field.sub`). Named by proto field
 * path, as the gateway reads them (it takes JSON names too).
 */
function queryParams(
  f: DescField,
  name: string,
  ref: (m: DescMessage) => JsonObject,
  depth = 0,
): JsonObject[] {
  if (f.fieldKind === "message") {
    if (depth > 3 || wellKnown[f.message.typeName]) {
      return wellKnown[f.message.typeName] ? [param(name, wellKnown[f.message.typeName]!, f)] : [];
    }
    return f.message.fields.flatMap((sub) =>
      queryParams(sub, `${name}.${sub.name}`, ref, depth + 1),
    );
  }
  if (f.fieldKind === "map") return [];
  return [param(name, fieldSchema(f, ref), f)];
}

function param(name: string, schema: JsonObject, f: DescField): JsonObject {
  const p: JsonObject = { name, in: "query", required: false, schema };
  if (f.fieldKind === "list") {
    p.style = "form";
    p.explode = true;
  }
  return p;
}

/** Add the schema of `m` and of every message it refers to. */
function addMessage(m: DescMessage, schemas: Record<string, JsonObject>): void {
  if (schemas[m.typeName] || wellKnown[m.typeName]) return;
  const properties: JsonObject = {};
  const required: string[] = [];
  const obj: JsonObject = { type: "object", properties, additionalProperties: false };
  schemas[m.typeName] = obj;
  const ref = (sub: DescMessage): JsonObject => {
    addMessage(sub, schemas);
    return wellKnown[sub.typeName] ?? { $ref: `#/components/schemas/${sub.typeName}` };
  };
  for (const f of m.fields) {
    const schema = fieldSchema(f, ref);
    const behaviour = hasOption(f, field_behavior) ? getOption(f, field_behavior) : [];
    if (behaviour.includes(FieldBehavior.OUTPUT_ONLY)) schema.readOnly = true;
    if (behaviour.includes(FieldBehavior.INPUT_ONLY)) schema.writeOnly = true;
    if (behaviour.includes(FieldBehavior.REQUIRED)) required.push(f.jsonName);
    if (behaviour.includes(FieldBehavior.IMMUTABLE)) {
      schema.description = "Immutable: set on creation only.";
    }
    properties[f.jsonName] = schema;
  }
  if (required.length > 0) obj.required = required;
}

/** The JSON schema of a field's value (proto3 JSON mapping). */
function fieldSchema(f: DescField, ref: (m: DescMessage) => JsonObject): JsonObject {
  switch (f.fieldKind) {
    case "scalar":
      return scalarSchema(f.scalar);
    case "enum":
      return enumSchema(f.enum);
    case "message":
      return wellKnown[f.message.typeName] ?? ref(f.message);
    case "list": {
      const items =
        f.listKind === "scalar"
          ? scalarSchema(f.scalar)
          : f.listKind === "enum"
            ? enumSchema(f.enum)
            : (wellKnown[f.message.typeName] ?? ref(f.message));
      return { type: "array", items };
    }
    case "map": {
      const values =
        f.mapKind === "scalar"
          ? scalarSchema(f.scalar)
          : f.mapKind === "enum"
            ? enumSchema(f.enum)
            : (wellKnown[f.message.typeName] ?? ref(f.message));
      return { type: "object", additionalProperties: values };
    }
  }
}

function scalarSchema(t: ScalarType): JsonObject {
  switch (t) {
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return { type: "number" };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return { type: "string", format: "int64" };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { type: "string", format: "uint64" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "int32", minimum: 0 };
    default:
      return { type: "integer", format: "int32" };
  }
}

function enumSchema(e: DescEnum): JsonObject {
  return { type: "string", enum: e.values.map((v) => v.name) };
}

/** Well-known types in their JSON forms. */
const wellKnown: Record<string, JsonObject> = {
  "google.protobuf.Timestamp": { type: "string", format: "date-time" },
  "google.protobuf.Duration": { type: "string", pattern: "^-?[0-9]+(\\.[0-9]+)?s$" },
  "google.protobuf.FieldMask": {
    type: "string",
    description: "Field paths, comma-separated (camelCase or snake_case).",
  },
  "google.protobuf.Empty": { type: "object", additionalProperties: false },
  "google.protobuf.Struct": { type: "object" },
  "google.protobuf.Value": {},
  "google.protobuf.ListValue": { type: "array" },
  "google.protobuf.Any": { type: "object", properties: { "@type": { type: "string" } } },
  "google.protobuf.StringValue": { type: ["string", "null"] },
  "google.protobuf.BoolValue": { type: ["boolean", "null"] },
  "google.protobuf.Int32Value": { type: ["integer", "null"] },
  "google.protobuf.UInt32Value": { type: ["integer", "null"] },
  "google.protobuf.Int64Value": { type: ["string", "null"] },
  "google.protobuf.UInt64Value": { type: ["string", "null"] },
  "google.protobuf.DoubleValue": { type: ["number", "null"] },
  "google.protobuf.FloatValue": { type: ["number", "null"] },
  "google.protobuf.BytesValue": { type: ["string", "null"] },
};

/** google.rpc.Status as the API writes it: ErrorInfo first among the details. */
const statusSchema: JsonObject = {
  type: "object",
  description: "The error body of every protocol's JSON (google.rpc.Status).",
  properties: {
    code: { type: "integer", format: "int32", description: "The gRPC code." },
    message: { type: "string" },
    details: {
      type: "array",
      items: {
        type: "object",
        properties: { "@type": { type: "string" } },
        required: ["@type"],
        additionalProperties: true,
      },
    },
  },
  required: ["code"],
};
