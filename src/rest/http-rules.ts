import {
  type DescField,
  type DescMethod,
  type DescMethodUnary,
  type DescService,
  getOption,
  hasOption,
} from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { http } from "../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../gen/google/api/http_pb.js";
import { type FieldPath, fieldNamed, isTextSettable, resolveFieldPath } from "./field-path.js";
import { type PathTemplate, parsePathTemplate } from "./path-template.js";

/** Where a rule takes its request body from. */
export type BodyRule =
  | { readonly kind: "none" }
  | { readonly kind: "all" }
  | { readonly kind: "field"; readonly field: DescField };

/**
 * RestRule is one HTTP binding of one RPC, with everything derivable from the descriptors
 * resolved at start-up: the parsed template, the fields its variables set, the body and
 * response body fields and the implicit update mask.
 */
export interface RestRule {
  /** `GET`, `POST`, …; a custom pattern's kind, upper-cased. */
  readonly httpMethod: string;
  readonly template: PathTemplate;
  readonly service: DescService;
  readonly method: DescMethodUnary;
  /** `package.Service/Method`, for logs. */
  readonly rpc: string;
  readonly body: BodyRule;
  /** The output field sent as the response body (`response_body`), or undefined for all. */
  readonly responseBody: DescField | undefined;
  /** The field each template variable sets, in `template.variables` order. */
  readonly pathFields: readonly FieldPath[];
  /**
   * The request's `update_mask` FieldMask when the body is a message field: a request that
   * gives no mask gets one made of the JSON keys present in the body.
   */
  readonly updateMask: DescField | undefined;
}

/**
 * Read the `google.api.http` option (and its additional bindings) of every method of
 * `services` into RestRules. Methods without the option are not exposed over REST. Throws at
 * start-up for a malformed template, a field path that does not exist or cannot be set from a
 * path segment, an unknown body or response body field, or a streaming method.
 */
export function compileHttpRules(services: readonly DescService[]): RestRule[] {
  return services.flatMap(rulesOf);
}

/**
 * The rules of each service, compiled once a process: they follow from its descriptors alone,
 * and a process that starts many servers (the tests start hundreds) compiled them for each.
 */
const compiled = new WeakMap<DescService, readonly RestRule[]>();

function rulesOf(service: DescService): readonly RestRule[] {
  let rules = compiled.get(service);
  if (!rules) {
    rules = compileService(service);
    compiled.set(service, rules);
  }
  return rules;
}

function compileService(service: DescService): RestRule[] {
  const rules: RestRule[] = [];
  for (const method of service.methods) {
    if (!hasOption(method, http)) continue;
    const top = getOption(method, http);
    for (const binding of [top, ...top.additionalBindings]) {
      if (binding !== top && binding.additionalBindings.length > 0) {
        throw ruleError(method, "additional_bindings may not nest");
      }
      rules.push(compileRule(service, method, binding));
    }
  }
  return rules;
}

function compileRule(service: DescService, method: DescMethod, rule: HttpRule): RestRule {
  if (method.methodKind !== "unary") throw ruleError(method, "only unary methods can be bound");
  const { httpMethod, path } = patternOf(method, rule);
  let template: PathTemplate;
  try {
    template = parsePathTemplate(path);
  } catch (err) {
    throw ruleError(method, (err as Error).message);
  }
  const input = method.input;
  const pathFields = template.variables.map((v) => {
    const resolved = resolveFieldPath(input, v.fieldPath, true);
    if (!resolved) throw ruleError(method, `${path}: no field ${v.fieldPath} in ${input.typeName}`);
    const leaf = resolved.fields[resolved.fields.length - 1]!;
    const settable = leaf.fieldKind === "scalar" || leaf.fieldKind === "enum";
    if (!settable || !isTextSettable(leaf, false)) {
      throw ruleError(method, `${path}: ${v.fieldPath} must be a singular scalar field`);
    }
    return resolved;
  });

  let body: BodyRule = { kind: "none" };
  if (rule.body === "*") body = { kind: "all" };
  else if (rule.body !== "") {
    const field = fieldNamed(input, rule.body, true);
    if (!field) throw ruleError(method, `body: no field ${rule.body} in ${input.typeName}`);
    body = { kind: "field", field };
  }

  let responseBody: DescField | undefined;
  if (rule.responseBody !== "") {
    responseBody = fieldNamed(method.output, rule.responseBody, true);
    if (!responseBody) {
      throw ruleError(
        method,
        `response_body: no field ${rule.responseBody} in ${method.output.typeName}`,
      );
    }
  }

  const mask = fieldNamed(input, "update_mask", true);
  const updateMask =
    body.kind === "field" &&
    body.field.fieldKind === "message" &&
    mask?.fieldKind === "message" &&
    mask.message.typeName === FieldMaskSchema.typeName
      ? mask
      : undefined;

  return {
    httpMethod,
    template,
    service,
    method: method as DescMethodUnary,
    rpc: `${service.typeName}/${method.name}`,
    body,
    responseBody,
    pathFields,
    updateMask,
  };
}

const httpToken = /^[A-Z]+$/;

function patternOf(method: DescMethod, rule: HttpRule): { httpMethod: string; path: string } {
  const p = rule.pattern;
  switch (p.case) {
    case "get":
    case "put":
    case "post":
    case "delete":
    case "patch":
      return { httpMethod: p.case.toUpperCase(), path: p.value };
    case "custom": {
      const kind = p.value.kind.toUpperCase();
      if (!httpToken.test(kind)) throw ruleError(method, `bad custom kind ${p.value.kind}`);
      return { httpMethod: kind, path: p.value.path };
    }
    default:
      throw ruleError(method, "no pattern");
  }
}

function ruleError(method: DescMethod, reason: string): Error {
  return new Error(`google.api.http of ${method.parent.typeName}/${method.name}: ${reason}`);
}
