import { badRequest } from "./scim-error.js";
import type { FilterSchema } from "./scim-filter.js";
import { type AttributeDef, findAttribute } from "./scim-schemas.js";

/** The longest string attribute value kept. */
export const maxStringLength = 1024;
/** The most values a multi-valued attribute holds (emails, phone numbers). */
export const maxValues = 100;

/** A resource's writable attributes, by canonical name; an extension's under its URN. */
export type Doc = Record<string, unknown>;

// Attributes a client may send that are not kept: Gatehouse's own (id, meta, groups), the
// schemas list (checked apart), and a password (people sign in through their provider).
const ignored = new Set(["schemas", "id", "meta", "password"]);

/**
 * Check a client's resource body (POST, PUT, or the result of a PATCH) against the schema and
 * return what is kept, each attribute under its canonical name. Unknown attributes are left
 * out (RFC 7644 3.3 lets a service provider ignore them); read-only ones are ignored; a value
 * of the wrong type is a 400 `invalidValue`, naming the attribute.
 */
export function normalize(body: Record<string, unknown>, schema: FilterSchema): Doc {
  const out: Doc = {};
  for (const [key, value] of Object.entries(body)) {
    if (ignored.has(key.toLowerCase()) || value === null || value === undefined) continue;
    const ext = Object.keys(schema.extensions).find((u) => u.toLowerCase() === key.toLowerCase());
    if (ext) {
      if (typeof value !== "object" || Array.isArray(value)) {
        throw badRequest("invalidValue", `${ext} must be an object`);
      }
      const inner = attributes(value as Record<string, unknown>, schema.extensions[ext]!, ext);
      if (Object.keys(inner).length > 0) out[ext] = inner;
      continue;
    }
    const def = findAttribute(schema.attributes, key);
    if (!def || def.mutability === "readOnly" || def.name === "id") continue;
    const v = checkedValue(def, value, def.name);
    if (v !== undefined) out[def.name] = v;
  }
  return out;
}

function attributes(obj: Record<string, unknown>, defs: readonly AttributeDef[], path: string) {
  const out: Doc = {};
  for (const [key, value] of Object.entries(obj)) {
    const def = findAttribute(defs, key);
    if (!def || def.mutability === "readOnly" || value === null || value === undefined) continue;
    const v = checkedValue(def, value, `${path}:${def.name}`);
    if (v !== undefined) out[def.name] = v;
  }
  return out;
}

/** A value checked against its definition (multi-valued: an array of them, one accepted bare). */
export function checkedValue(def: AttributeDef, value: unknown, path: string): unknown {
  if (def.multiValued) {
    const list = Array.isArray(value) ? value : [value];
    if (list.length > maxValues) {
      throw badRequest("invalidValue", `${path} has more than ${maxValues} values`);
    }
    const items = list
      .map((v, i) => single(def, v, `${path}[${i}]`))
      .filter((v) => v !== undefined);
    return items.length === 0 ? undefined : items;
  }
  return single(def, value, path);
}

function single(def: AttributeDef, value: unknown, path: string): unknown {
  if (value === null || value === undefined) return undefined;
  switch (def.type) {
    case "boolean":
      return booleanOf(value, path);
    case "complex": {
      // Entra ID sends a manager as its id alone: a complex value given bare is its `value`.
      if (typeof value === "string" && findAttribute(def.subAttributes ?? [], "value")) {
        return { value: stringOf(value, `${path}.value`) };
      }
      if (typeof value !== "object" || Array.isArray(value)) {
        throw badRequest("invalidValue", `${path} must be an object`);
      }
      const inner = attributes(value as Record<string, unknown>, def.subAttributes ?? [], path);
      return Object.keys(inner).length === 0 ? undefined : inner;
    }
    default:
      return stringOf(value, path);
  }
}

/**
 * A boolean as clients send it: true or false, or (Entra ID) the strings "True" and "False"
 * in any case.
 */
export function booleanOf(value: unknown, path: string): boolean {
  if (typeof value === "boolean") return value;
  if (typeof value === "string") {
    const lower = value.toLowerCase();
    if (lower === "true") return true;
    if (lower === "false") return false;
  }
  throw badRequest("invalidValue", `${path} must be a boolean`);
}

function stringOf(value: unknown, path: string): string {
  if (typeof value !== "string") throw badRequest("invalidValue", `${path} must be a string`);
  if (value.length > maxStringLength) {
    throw badRequest("invalidValue", `${path} is longer than ${maxStringLength} characters`);
  }
  // PostgreSQL refuses NUL in text, and no directory means one.
  if (value.includes("\u0000")) throw badRequest("invalidValue", `${path} holds a NUL character`);
  return value;
}

/**
 * Check that a body names the resource's schema in `schemas` (RFC 7643 3: REQUIRED). Other
 * URNs are let through: Entra ID names a schema of its own on every Group.
 */
export function requireSchemas(body: Record<string, unknown>, core: string) {
  const schemas = body.schemas;
  if (!Array.isArray(schemas) || !schemas.every((s) => typeof s === "string")) {
    throw badRequest("invalidSyntax", `schemas must be a list holding ${core}`);
  }
  if (!schemas.some((s: string) => s.toLowerCase() === core.toLowerCase())) {
    throw badRequest("invalidSyntax", `schemas must hold ${core}`);
  }
}
