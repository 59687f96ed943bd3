import type { SortField } from "../store/store.js";

/**
 * A listed record: its fields under their protobuf-es names (`create_time` is `createTime`,
 * in ms), as the resource message has them.
 */
export interface Sortable {
  uid: string;
}

/**
 * The value of a record for a sort field, for building the next page's cursor: the record's
 * property of the field's camelCase name, a boolean as 0 or 1 (as SQLite stores it, and as
 * PostgreSQL reads a boolean parameter). Throws for a field the record lacks (a bug: the
 * list engine admits only the message's scalar fields, and the records carry them).
 */
export function sortValueOf(item: Sortable, field: SortField): string | number {
  const v = (item as unknown as Record<string, unknown>)[camelCase(field)];
  if (typeof v === "string" || typeof v === "number") return v;
  if (typeof v === "boolean") return v ? 1 : 0;
  throw new Error(`sort field ${field}: the record has no scalar value for it`);
}

const camelCases = new Map<string, string>();

/** `advisory_id` as protobuf-es names it: `advisoryId`. */
function camelCase(field: string): string {
  let out = camelCases.get(field);
  if (out === undefined) {
    out = field.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    camelCases.set(field, out);
  }
  return out;
}
