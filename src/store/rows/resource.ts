/**
 * The one declaration of a stored resource: its table and columns, the proto field each column
 * stores, its row mapping, its parent and what the parent's delete does. The INSERT and UPDATE
 * column lists (`insertRow`, `updateStored`), the list columns, the group's delete rules
 * (`childChecks`, `cascades` in rows/resources.ts) derive from it; the compiler holds the
 * columns to the row type, and test/store/resource-declarations.test.ts holds them to the
 * proto message and to the schema the migrations make, on both backends.
 */
import type { ListColumns } from "../list-clauses.js";
import { one, type Param, run, type Steps, type Text, updateRow } from "../ops/operation.js";

/** What a column holds: a field of the proto message, or something only the store needs. */
export type Column = (
  | {
      /** The top-level field of the proto message (its proto name) this column stores. */
      readonly field: string;
    }
  | {
      /** Why no field of the message shows this column (a parent, a hash, a derived index). */
      readonly internal: string;
    }
) & {
  /**
   * Written by the resource's Update: in the UPDATE's SET list (`update_time` always is), or,
   * for a view's column, through its own table (a role's capabilities).
   */
  readonly updated?: true;
  /**
   * Why a List may not be ordered by this column's field, though it is a scalar: an order
   * would tell a reader something of a secret, or of a value not every reader is shown.
   */
  readonly unsortable?: string;
  /** Made by the database (an identity, a default): not in the INSERT's column list. */
  readonly generated?: true;
  /** A column only one dialect's table has (SQLite's groups keep an integer parent). */
  readonly only?: "sqlite" | "pg";
  /** A column the view adds to the table's (a role's capabilities, a binding's role name). */
  readonly fromView?: true;
};

/** The kinds of parent a resource lives in. */
export type ParentKind = "group" | "repo";

/**
 * Where a resource lives and what its parent's delete does: `block` refuses the delete while
 * one exists (not_empty, naming `collection`), `cascade` deletes it with the parent.
 */
export interface Parent {
  readonly kind: ParentKind;
  /** The column holding the parent's uid. */
  readonly column: string;
  readonly onDelete: "block" | "cascade";
  /** The `?`-parameterized query for "the parent (its uid) has one", where `column` is not it. */
  readonly find?: Text;
}

/** A resource's storage, declared once (see the top of this file). */
export interface ResourceDeclaration<Row, Rec> {
  /** The resource as errors name it: `repo`. */
  readonly kind: string;
  /** Its name in a not_empty error's details: `repos`, `identityProviders`. */
  readonly collection: string;
  /** The proto message it is served as (its full name), or why there is none. */
  readonly message: string | { readonly none: string };
  /** The table; `view` is what reads see, when joined or aggregated columns are added. */
  readonly table: string;
  readonly view?: string;
  /**
   * Every column of the table, in the INSERT's order, and those the view adds (`fromView`).
   * Each of the row type's keys is one (the compiler checks); a column the row type does not
   * read (a derived index, an integer key) is one too, so that the test can hold the
   * declaration to the schema.
   */
  readonly columns: { readonly [K in keyof Row & string]-?: Column } & Readonly<
    Record<string, Column>
  >;
  /** Fields of the message no column stores, each with why: computed when served, or input only. */
  readonly computed?: Readonly<Record<string, string>>;
  readonly parent?: Parent;
  /** The list filters' columns, where not `name` and the parent's. */
  readonly list?: { readonly name?: string; readonly group?: string };
  /** The record of a row as read (from `view` if there is one). */
  readonly recordOf: (row: Row) => Rec;
}

/** A declaration with what derives from it: its statements and list columns. */
export interface Resource<Row, Rec> extends ResourceDeclaration<Row, Rec> {
  /** `SELECT * FROM <view or table> WHERE uid = ?`. */
  readonly select: string;
  /** `INSERT INTO <table> (<columns but generated>) VALUES (...)`. */
  readonly insert: string;
  /** The same, `RETURNING *`: costs SQLite nothing extra, spares PostgreSQL a round trip. */
  readonly insertReturning: string;
  /** The INSERT's columns, in order. */
  readonly insertColumns: readonly string[];
  /** `UPDATE <table> SET <updated columns>, update_time = ? WHERE uid = ?`. */
  readonly update: string;
  /** The UPDATE's SET columns, in order (update_time last). */
  readonly updateColumns: readonly string[];
  readonly listColumns: ListColumns;
}

/** Declare a resource's storage, and derive its statements. */
export function declareResource<Row, Rec>(d: ResourceDeclaration<Row, Rec>): Resource<Row, Rec> {
  const entries = Object.entries(d.columns as Record<string, Column>);
  const insertColumns = entries
    .filter(([, c]) => !c.generated && !c.only && !c.fromView)
    .map(([n]) => n);
  const updateColumns = [
    ...entries.filter(([, c]) => c.updated && !c.fromView).map(([n]) => n),
    ...("update_time" in d.columns ? ["update_time"] : []),
  ];
  const parent = d.parent?.column ?? "uid";
  const insert = `INSERT INTO ${d.table} (${insertColumns.join(", ")}) VALUES (${insertColumns
    .map(() => "?")
    .join(", ")})`;
  return {
    ...d,
    select: `SELECT * FROM ${d.view ?? d.table} WHERE uid = ?`,
    insert,
    insertReturning: `${insert} RETURNING *`,
    insertColumns,
    update: `UPDATE ${d.table} SET ${updateColumns.map((c) => `${c} = ?`).join(", ")} WHERE uid = ?`,
    updateColumns,
    listColumns: {
      table: d.view ?? d.table,
      uid: "uid",
      parent,
      group: d.list?.group ?? parent,
      name: d.list?.name ?? "name",
      sort: sortColumnsOf(d.columns as Record<string, Column>, d.list?.name),
    },
  };
}

/**
 * The sort columns of a declaration: the common fields, then each field stored whole in one
 * column of its own (a field spread over several columns, a role's name and description in a
 * binding, is no one value), unless the column says why not (`unsortable`). Which of them are
 * scalars, and so sortable, the message tells (src/list/sort-fields.ts).
 */
function sortColumnsOf(
  columns: Readonly<Record<string, Column>>,
  nameColumn: string | undefined,
): Record<string, string> {
  const columnsOf = new Map<string, string[]>();
  const refused = new Set<string>();
  for (const [column, c] of Object.entries(columns)) {
    if (!("field" in c)) continue;
    columnsOf.set(c.field, [...(columnsOf.get(c.field) ?? []), column]);
    if (c.unsortable !== undefined) refused.add(c.field);
  }
  const out: Record<string, string> = {
    name: nameColumn ?? "name",
    create_time: "create_time",
    update_time: "update_time",
    uid: "uid",
  };
  for (const [field, stored] of columnsOf) {
    if (stored.length === 1 && !refused.has(field) && !(field in out)) out[field] = stored[0]!;
  }
  return out;
}

/**
 * The columns of a row to write: the row type's (checked against it), and the table's that
 * reads never see (an invite's code hash).
 */
export type Written<Row> = Partial<Row> & Readonly<Record<string, Param | undefined>>;

/** The values a row gives the columns `names`, in order; a column it leaves out is a bug. */
function valuesOf(r: { table: string }, row: object, names: readonly string[]): Param[] {
  const out: Param[] = new Array(names.length);
  for (let i = 0; i < names.length; i++) {
    const v = (row as Record<string, Param | undefined>)[names[i]!];
    if (v === undefined) throw new Error(`${r.table}: no value for column ${names[i]}`);
    out[i] = v;
  }
  return out;
}

/**
 * Insert `row` (every column of the INSERT: the declaration's, not generated) and return the
 * row as stored.
 */
export function* insertRow<Row, Rec>(r: Resource<Row, Rec>, row: Written<Row>): Steps<Row> {
  const stored = yield* one<Row>(r.insertReturning, ...valuesOf(r, row, r.insertColumns));
  return stored!;
}

/** Insert `row` as insertRow does, where the caller reads it back otherwise (through a view). */
export function* insertOnly<Row, Rec>(r: Resource<Row, Rec>, row: Written<Row>): Steps<void> {
  yield* run(r.insert, ...valuesOf(r, row, r.insertColumns));
}

/**
 * Write the updated columns of `row` (each column the Update sets, and update_time) to the
 * stored row `uid`, and return it as it is after (read from the view if there is one).
 */
export function* updateStored<Row, Rec>(
  r: Resource<Row, Rec>,
  uid: string,
  row: Written<Row>,
): Steps<Row> {
  const values = valuesOf(r, row, r.updateColumns);
  if (r.view !== undefined) {
    // The UPDATE's own row lacks the view's columns: read the row again through the view.
    yield* run(r.update, ...values, uid);
    return (yield* one<Row>(r.select, uid))!;
  }
  return (yield* updateRow<Row>({ reread: r.select, key: uid }, r.update, ...values, uid))!;
}

/** Write the updated columns of `row` as updateStored does, where the caller reads it back. */
export function* updateOnly<Row, Rec>(
  r: Resource<Row, Rec>,
  uid: string,
  row: Written<Row>,
): Steps<number> {
  return yield* run(r.update, ...valuesOf(r, row, r.updateColumns), uid);
}
