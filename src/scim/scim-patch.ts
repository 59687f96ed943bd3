import { badRequest } from "./scim-error.js";
import { type CheckedFilter, type FilterSchema, parseFilter } from "./scim-filter.js";
import { checkedValue, type Doc } from "./scim-resource.js";
import { type AttributeDef, findAttribute, patchOpSchema } from "./scim-schemas.js";

/** The most operations one PATCH may carry. */
export const maxOperations = 1000;

/** Where a PATCH path points (RFC 7644 3.5.2: `attrPath [valFilter] [.subAttr]`). */
interface Target {
  /** The extension URN the attribute is under, or undefined for a core one. */
  readonly ext: string | undefined;
  readonly def: AttributeDef;
  readonly filter: CheckedFilter | undefined;
  readonly sub: AttributeDef | undefined;
}

// attrPath with an optional URN, value filter and sub-attribute.
const pathPattern = /^(?:(urn:[^[\]]*):)?([A-Za-z$][\w$-]*)(?:\[(.*)\])?(?:\.([A-Za-z$][\w$-]*))?$/;

/**
 * Parse a PATCH path against the schema: a 400 `invalidPath` for one that does not parse or
 * names a sub-attribute or filter the attribute cannot have; undefined for an attribute
 * Gatehouse does not keep (an operation on it changes nothing, as its value in a POST would).
 */
function targetOf(path: string, schema: FilterSchema): Target | undefined {
  const m = pathPattern.exec(path);
  if (!m) throw badRequest("invalidPath", `the path ${JSON.stringify(path)} does not parse`);
  const [, urn, name = "", filterText, subName] = m;
  let defs = schema.attributes;
  let ext: string | undefined;
  if (urn !== undefined) {
    ext = Object.keys(schema.extensions).find((u) => u.toLowerCase() === urn.toLowerCase());
    if (ext) defs = schema.extensions[ext]!;
    else if (!/^urn:ietf:params:scim:schemas:core:2\.0:(User|Group)$/i.test(urn)) return undefined;
  }
  const def = findAttribute(defs, name);
  if (!def || def.name === "id") return undefined;
  if (def.mutability === "readOnly") {
    throw badRequest("mutability", `${def.name} is read-only`);
  }
  let filter: CheckedFilter | undefined;
  if (filterText !== undefined) {
    if (!def.multiValued || !def.subAttributes) {
      throw badRequest("invalidPath", `${def.name} is not multi-valued: it takes no filter`);
    }
    filter = parseFilter(filterText, schema, def);
  }
  let sub: AttributeDef | undefined;
  if (subName !== undefined) {
    sub = findAttribute(def.subAttributes ?? [], subName);
    if (!sub) throw badRequest("invalidPath", `${def.name} has no sub-attribute ${subName}`);
  }
  return { ext, def, filter, sub };
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Apply a PATCH body (RFC 7644 section 3.5.2) to a resource's attributes and return the new
 * attributes (the caller checks them as it checks a PUT's). Both shapes clients send are
 * taken: Okta's (`replace` without a path, `{"active": false}`) and Entra ID's (capitalised
 * `Replace`, `"False"` as a string, `Remove` of `members` with the values to remove).
 */
export function applyPatch(doc: Doc, body: unknown, schema: FilterSchema): Doc {
  if (!isObject(body)) throw badRequest("invalidSyntax", "a PATCH body is a JSON object");
  const schemas = body.schemas;
  if (
    !Array.isArray(schemas) ||
    !schemas.some((s) => typeof s === "string" && s.toLowerCase() === patchOpSchema.toLowerCase())
  ) {
    throw badRequest("invalidSyntax", `schemas must hold ${patchOpSchema}`);
  }
  const key = Object.keys(body).find((k) => k.toLowerCase() === "operations");
  const ops = key === undefined ? undefined : body[key];
  if (!Array.isArray(ops) || ops.length === 0) {
    throw badRequest("invalidSyntax", "Operations must be a non-empty list");
  }
  if (ops.length > maxOperations) {
    throw badRequest("invalidSyntax", `a PATCH holds at most ${maxOperations} operations`);
  }
  const out = structuredClone(doc);
  for (const op of ops) {
    if (!isObject(op)) throw badRequest("invalidSyntax", "each operation is a JSON object");
    const kind = typeof op.op === "string" ? op.op.toLowerCase() : "";
    if (kind !== "add" && kind !== "remove" && kind !== "replace") {
      throw badRequest("invalidSyntax", `op must be add, remove or replace`);
    }
    if (op.path !== undefined && typeof op.path !== "string") {
      throw badRequest("invalidPath", "path must be a string");
    }
    if (kind !== "remove" && !("value" in op)) {
      throw badRequest("invalidSyntax", `${kind} needs a value`);
    }
    const path = op.path?.trim() ?? "";
    // A path that is an extension's URN names the whole extension: its attributes are added
    // or replaced as given, or all removed.
    const wholeExt = Object.keys(schema.extensions).find(
      (u) => u.toLowerCase() === path.toLowerCase(),
    );
    if (wholeExt) {
      if (kind === "remove") {
        delete out[wholeExt];
        continue;
      }
      if (!isObject(op.value)) {
        throw badRequest("invalidValue", `${wholeExt} takes an object of its attributes`);
      }
      for (const [inner, v] of Object.entries(op.value)) {
        if (inner.toLowerCase() === "schemas") continue;
        const target = targetOf(`${wholeExt}:${inner}`, schema);
        if (target) apply(out, target, kind, v);
      }
      continue;
    }
    if (path !== "") {
      const target = targetOf(path, schema);
      if (target) apply(out, target, kind, op.value);
      continue;
    }
    if (kind === "remove") throw badRequest("noTarget", "remove needs a path");
    if (!isObject(op.value)) {
      throw badRequest("invalidValue", `${kind} without a path takes an object of attributes`);
    }
    for (const [name, value] of Object.entries(op.value)) {
      if (["schemas", "id", "meta"].includes(name.toLowerCase())) continue;
      const ext = Object.keys(schema.extensions).find(
        (u) => u.toLowerCase() === name.toLowerCase(),
      );
      if (ext && isObject(value)) {
        for (const [inner, v] of Object.entries(value)) {
          const target = targetOf(`${ext}:${inner}`, schema);
          if (target) apply(out, target, kind, v);
        }
        continue;
      }
      // A key may itself be a path (`name.givenName`), as some clients send them.
      const target = targetOf(name, schema);
      if (target) apply(out, target, kind, value);
    }
  }
  return out;
}

/** The multi-valued attribute's element identity: its `value` if it has one. */
function sameElement(a: unknown, b: unknown): boolean {
  if (isObject(a) && isObject(b) && a.value !== undefined) return a.value === b.value;
  return JSON.stringify(a) === JSON.stringify(b);
}

function apply(out: Doc, t: Target, kind: "add" | "remove" | "replace", value: unknown) {
  const container: Doc = t.ext ? ((out[t.ext] as Doc | undefined) ?? {}) : out;
  if (t.ext) out[t.ext] = container;
  const name = t.def.name;
  const where = t.ext ? `${t.ext}:${name}` : name;
  if (t.def.multiValued) {
    const list = Array.isArray(container[name]) ? (container[name] as unknown[]) : [];
    if (!t.filter && !t.sub) {
      if (kind === "remove") {
        if (value === undefined || value === null) delete container[name];
        else {
          // Entra ID removes members by listing them as the value.
          const gone = (checkedValue(t.def, value, where) as unknown[] | undefined) ?? [];
          container[name] = list.filter((e) => !gone.some((g) => sameElement(e, g)));
        }
        return;
      }
      const given = (checkedValue(t.def, value, where) as unknown[] | undefined) ?? [];
      if (kind === "replace") {
        container[name] = given;
        return;
      }
      const merged = [...list];
      for (const g of given) if (!merged.some((e) => sameElement(e, g))) merged.push(g);
      container[name] = merged;
      return;
    }
    const matched = t.filter ? list.filter((e) => t.filter!.matches(e as Doc)) : list;
    if (kind === "remove") {
      container[name] = t.sub
        ? list.map((e) => {
            if (!matched.includes(e) || !isObject(e)) return e;
            const { [t.sub!.name]: _, ...rest } = e;
            return rest;
          })
        : list.filter((e) => !matched.includes(e));
      return;
    }
    if (matched.length === 0) {
      // Entra ID sets `emails[type eq "work"].value` on a user with no work email yet: the
      // element the filter describes is added (a filter that describes none is noTarget).
      const seed = seedOf(t.filter);
      if (!seed) throw badRequest("noTarget", `no value of ${where} matches the filter`);
      list.push(seed);
      matched.push(seed);
    }
    for (const e of matched) {
      if (!isObject(e)) continue;
      if (t.sub) e[t.sub.name] = value;
      else if (isObject(value)) Object.assign(e, value);
      else throw badRequest("invalidValue", `${where} takes an object`);
    }
    container[name] = list;
    return;
  }
  if (t.sub) {
    const obj = isObject(container[name]) ? (container[name] as Doc) : {};
    if (kind === "remove") delete obj[t.sub.name];
    else obj[t.sub.name] = value;
    container[name] = obj;
    return;
  }
  if (kind === "remove") {
    delete container[name];
    return;
  }
  // A complex attribute's sub-attributes not given stay as they are (RFC 7644 3.5.2.1, 3).
  if (t.def.type === "complex" && isObject(value) && isObject(container[name])) {
    container[name] = { ...(container[name] as Doc), ...value };
    return;
  }
  container[name] = value;
}

/** The element an equality filter describes (`type eq "work"`), or undefined. */
function seedOf(filter: CheckedFilter | undefined): Doc | undefined {
  const ast = filter?.ast;
  if (ast?.op === "eq" && typeof ast.compValue === "string") {
    return { [ast.attrPath]: ast.compValue };
  }
  return undefined;
}
