import { type Filter, parse } from "scim2-parse-filter";
import { badRequest } from "./scim-error.js";
import { type AttributeDef, findAttribute } from "./scim-schemas.js";

/** The longest filter taken (a client's filters are a few dozen characters). */
export const maxFilterLength = 2048;

/** The deepest nesting of and/or/not/[] taken: the evaluator recurses. */
const maxDepth = 16;

/** What a filter can be checked against: a resource's attributes, and its meta. */
export interface FilterSchema {
  /** Top-level attributes (core and common), extension attributes under their URN. */
  readonly attributes: readonly AttributeDef[];
  readonly extensions: Readonly<Record<string, readonly AttributeDef[]>>;
}

// meta's sub-attributes can be filtered on (RFC 7644 3.4.2.2 gives meta.lastModified).
const metaDef: AttributeDef = {
  name: "meta",
  type: "complex",
  multiValued: false,
  description: "",
  required: false,
  caseExact: false,
  mutability: "readOnly",
  returned: "default",
  uniqueness: "none",
  subAttributes: ["created", "lastModified", "resourceType", "location", "version"].map((name) => ({
    name,
    type: "string" as const,
    multiValued: false,
    description: "",
    required: false,
    caseExact: true,
    mutability: "readOnly" as const,
    returned: "default" as const,
    uniqueness: "none" as const,
  })),
};

/** A filter checked against a schema: each attribute path resolved to its definition. */
export interface CheckedFilter {
  readonly ast: Filter;
  /** Whether `resource` (its SCIM representation) matches. */
  matches(resource: Record<string, unknown>): boolean;
}

/**
 * Parse a SCIM filter (RFC 7644 section 3.4.2.2) and check every attribute it names against
 * `schema`. Throws a 400 `invalidFilter` for a filter that does not parse, is too long or too
 * deep, or names an attribute the resource does not have.
 */
export function parseFilter(
  text: string,
  schema: FilterSchema,
  within?: AttributeDef,
): CheckedFilter {
  if (text.length > maxFilterLength) {
    throw badRequest("invalidFilter", `the filter is longer than ${maxFilterLength} characters`);
  }
  let ast: Filter;
  try {
    ast = parse(text);
  } catch {
    throw badRequest("invalidFilter", `the filter ${JSON.stringify(text)} does not parse`);
  }
  check(ast, schema, within, 0);
  return { ast, matches: (r) => test(ast, r, schema, within) };
}

/** Where a path points: the definition, and the path's segments to read. */
interface Resolved {
  readonly def: AttributeDef;
  readonly segments: readonly string[];
}

/**
 * Resolve an attribute path (`userName`, `name.givenName`, `emails.value`, `urn:...:User:
 * department`) against the schema, or within a multi-valued attribute's element (`within`).
 */
export function resolvePath(
  path: string,
  schema: FilterSchema,
  within: AttributeDef | undefined,
): Resolved | undefined {
  if (within) {
    const sub = findAttribute(within.subAttributes ?? [], path);
    return sub && { def: sub, segments: [sub.name] };
  }
  let rest = path;
  let defs = [...schema.attributes, metaDef];
  const prefix: string[] = [];
  const colon = path.lastIndexOf(":");
  if (colon >= 0) {
    const urn = path.slice(0, colon);
    rest = path.slice(colon + 1);
    const ext = Object.keys(schema.extensions).find((u) => u.toLowerCase() === urn.toLowerCase());
    if (ext) {
      defs = [...schema.extensions[ext]!];
      prefix.push(ext);
    } else if (!isCoreUrn(urn, schema)) {
      return undefined;
    }
  }
  const [head = "", sub, ...more] = rest.split(".");
  if (more.length > 0) return undefined;
  const top = findAttribute(defs, head);
  if (!top) return undefined;
  if (sub === undefined) return { def: top, segments: [...prefix, top.name] };
  const subDef = findAttribute(top.subAttributes ?? [], sub);
  return subDef && { def: subDef, segments: [...prefix, top.name, subDef.name] };
}

// A core schema URN in front of a core attribute is allowed (RFC 7644 3.10).
function isCoreUrn(urn: string, _schema: FilterSchema): boolean {
  return /^urn:ietf:params:scim:schemas:core:2\.0:(User|Group)$/i.test(urn);
}

function check(f: Filter, schema: FilterSchema, within: AttributeDef | undefined, depth: number) {
  if (depth > maxDepth) throw badRequest("invalidFilter", "the filter is nested too deeply");
  switch (f.op) {
    case "and":
    case "or":
      for (const g of f.filters) check(g, schema, within, depth + 1);
      return;
    case "not":
      check(f.filter, schema, within, depth + 1);
      return;
    case "[]": {
      const r = resolvePath(f.attrPath, schema, within);
      if (!r?.def.multiValued || !r.def.subAttributes) {
        throw badRequest("invalidFilter", `${f.attrPath} is not a multi-valued attribute`);
      }
      check(f.valFilter, schema, r.def, depth + 1);
      return;
    }
    default: {
      const r = resolvePath(f.attrPath, schema, within);
      if (!r) throw badRequest("invalidFilter", `no attribute ${JSON.stringify(f.attrPath)}`);
      if (r.def.type === "complex" && f.op !== "pr") {
        throw badRequest("invalidFilter", `${f.attrPath} is complex: compare its sub-attributes`);
      }
      if (f.op !== "pr" && f.op !== "eq" && f.op !== "ne" && r.def.type === "boolean") {
        throw badRequest("invalidFilter", `${f.attrPath} is a boolean: only eq, ne and pr`);
      }
    }
  }
}

/** The values at `segments` of `r`: arrays along the way are flattened (emails.value). */
function valuesAt(r: unknown, segments: readonly string[]): unknown[] {
  if (segments.length === 0) return Array.isArray(r) ? r : [r];
  if (Array.isArray(r)) return r.flatMap((e) => valuesAt(e, segments));
  if (typeof r !== "object" || r === null) return [];
  const [head, ...rest] = segments;
  const lower = head!.toLowerCase();
  const key = Object.keys(r).find((k) => k.toLowerCase() === lower);
  if (key === undefined) return [];
  const v = (r as Record<string, unknown>)[key];
  return v === undefined || v === null ? [] : valuesAt(v, rest);
}

function test(
  f: Filter,
  r: unknown,
  schema: FilterSchema,
  within: AttributeDef | undefined,
): boolean {
  switch (f.op) {
    case "and":
      return f.filters.every((g) => test(g, r, schema, within));
    case "or":
      return f.filters.some((g) => test(g, r, schema, within));
    case "not":
      return !test(f.filter, r, schema, within);
    case "[]": {
      const { def, segments } = resolvePath(f.attrPath, schema, within)!;
      return valuesAt(r, segments).some((e) => test(f.valFilter, e, schema, def));
    }
    default: {
      const { def, segments } = resolvePath(f.attrPath, schema, within)!;
      const values = valuesAt(r, segments).filter((v) => v !== "");
      if (f.op === "pr") return values.length > 0;
      const want = f.compValue;
      return values.some((v) => compare(f.op, v, want, def.caseExact));
    }
  }
}

function compare(op: string, value: unknown, want: unknown, caseExact: boolean): boolean {
  if (typeof value === "boolean" || typeof want === "boolean" || want === null) {
    const eq = value === want;
    return op === "eq" ? eq : op === "ne" ? !eq : false;
  }
  const fold = (s: unknown) => (caseExact ? String(s) : String(s).toLowerCase());
  const a = fold(value);
  const b = fold(want);
  switch (op) {
    case "eq":
      return a === b;
    case "ne":
      return a !== b;
    case "co":
      return a.includes(b);
    case "sw":
      return a.startsWith(b);
    case "ew":
      return a.endsWith(b);
    case "gt":
      return a > b;
    case "ge":
      return a >= b;
    case "lt":
      return a < b;
    case "le":
      return a <= b;
    default:
      return false;
  }
}

/**
 * The one indexed equality a filter implies, if it is `attr eq "v"` or an `and` holding one:
 * the store narrows to it before the filter is applied to what it returns.
 */
export function equalityOf(
  ast: Filter,
  attrs: readonly string[],
): { attr: string; value: string } | undefined {
  if (ast.op === "eq" && typeof ast.compValue === "string") {
    const attr = attrs.find((a) => a.toLowerCase() === ast.attrPath.toLowerCase());
    if (attr) return { attr, value: ast.compValue };
  }
  if (ast.op === "and") {
    for (const g of ast.filters) {
      const found = equalityOf(g, attrs);
      if (found) return found;
    }
  }
  return undefined;
}
