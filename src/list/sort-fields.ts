import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import type { ListColumns } from "../store/list-clauses.js";
import { commonSortFields, type SortField } from "../store/vocabulary.js";

/** The fields one List may be ordered by, and the names `order_by` may give each. */
export interface SortFields {
  /** A name `order_by` may write (proto name, JSON name, an older alias) -> the sort field. */
  readonly byName: ReadonlyMap<string, SortField>;
  /** The sortable fields' proto names, the common ones first: what an error lists. */
  readonly names: readonly SortField[];
}

// Names earlier releases accepted for the common fields.
const commonAliases: Readonly<Record<string, SortField>> = {
  createTime: "create_time",
  created_at: "create_time",
  updateTime: "update_time",
};

/** The sort fields of a List with no resource message: the common ones (events, internal). */
export const commonSorts: SortFields = sortFieldsFrom([]);

/**
 * The sort fields of a List of `message` over `columns`: the common ones, and every field of
 * the message that is a scalar (not bytes), an enum or a Timestamp and that the storage
 * declaration keeps in a sort column of its own (src/store/rows/resource.ts: one column, not
 * marked unsortable). Computed once per resource, when its service is made.
 */
export function sortFieldsOf(message: DescMessage, columns: Pick<ListColumns, "sort">): SortFields {
  return sortFieldsFrom(
    message.fields.filter((f) => isOrderable(f) && Object.hasOwn(columns.sort, f.name)),
  );
}

function sortFieldsFrom(fields: readonly DescField[]): SortFields {
  const byName = new Map<string, SortField>(commonSortFields.map((f) => [f, f]));
  for (const [alias, field] of Object.entries(commonAliases)) byName.set(alias, field);
  const names = [...commonSortFields];
  for (const f of fields) {
    if (!names.includes(f.name)) names.push(f.name);
    byName.set(f.name, f.name);
    byName.set(f.jsonName, f.name);
  }
  return { byName, names };
}

/** Whether a field has one value that orders: a scalar but bytes, an enum, a Timestamp. */
function isOrderable(f: DescField): boolean {
  switch (f.fieldKind) {
    case "scalar":
      return f.scalar !== ScalarType.BYTES;
    case "enum":
      return true;
    case "message":
      return f.message.typeName === "google.protobuf.Timestamp";
    default:
      return false;
  }
}
