import { type DescMessage, getOption, hasOption } from "@bufbuild/protobuf";
import Sqlite from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { sortFieldsOf } from "../../src/list/sort-fields.js";
import { serviceEntries } from "../../src/service-table.js";
import type { Resource } from "../../src/store/rows/resource.js";
import { resources } from "../../src/store/rows/resources.js";
import { migrate } from "../../src/store/sqlite/migrations.js";
import { declaredColumns } from "./declared-columns.js";

/**
 * Each stored resource is declared once (src/store/rows/<resource>-rows.ts): these hold the
 * declarations to the proto messages the API serves and to the schema the migrations make
 * (on SQLite here; test/store/postgres-resource-schema.test.ts on PostgreSQL). A field added
 * to a message without a column (or a stated reason, `computed`), a column without a field
 * (or a stated reason, `internal`), a column the migrations do not make: each fails here.
 */

/** Every v2 resource message: what a Get RPC of a served v2 service returns. */
const served = new Map<string, { message: DescMessage; updated: boolean }>();
for (const { service, adapter } of serviceEntries) {
  if (adapter || !service.typeName.includes(".v2")) continue;
  for (const method of service.methods) {
    if (!method.name.startsWith("Get") || !method.output.fields.some((f) => f.name === "uid")) {
      continue;
    }
    // A Get asked as a group (`group_uid`) serves a view of stored resources as that group's
    // owners see them (GetPerson: identities, with their bindings and sessions), not one of
    // its own.
    if (method.input.fields.some((f) => f.name === "group_uid")) continue;
    const updated = service.methods.some((m) => m.name === `Update${method.name.slice(3)}`);
    served.set(method.output.typeName, { message: method.output, updated });
  }
}

const declared = resources as readonly Resource<never, unknown>[];

const behaviourOf = (f: DescMessage["fields"][number]) =>
  hasOption(f, field_behavior) ? getOption(f, field_behavior) : [];

describe("resource declarations", () => {
  it("declare every resource the API serves, once", () => {
    const messages = declared.map((r) => r.message).filter((m) => typeof m === "string");
    expect(new Set(messages).size).toBe(messages.length);
    expect([...served.keys()].sort()).toEqual([...messages].sort());
  });

  describe.each(declared.map((r) => [r.kind, r] as const))("%s", (_kind, r) => {
    const entry = typeof r.message === "string" ? served.get(r.message) : undefined;

    it("stores every field of its message, or says why not, and no field it lacks", () => {
      expect(entry, `${String(r.message)} is not a served resource message`).toBeDefined();
      const fields = entry!.message.fields.map((f) => f.name).sort();
      const stored = new Set(
        Object.values(r.columns).flatMap((c) => ("field" in c ? [c.field] : [])),
      );
      const computed = Object.keys(r.computed ?? {});
      // A field is stored or computed, never both.
      expect(computed.filter((f) => stored.has(f))).toEqual([]);
      expect([...stored, ...computed].sort()).toEqual(fields);
    });

    it("writes in its Update every field an update may change", () => {
      if (!entry?.updated) return;
      const mutable = entry.message.fields
        .filter((f) => {
          const b = behaviourOf(f);
          return !(
            b.includes(FieldBehavior.OUTPUT_ONLY) ||
            b.includes(FieldBehavior.IDENTIFIER) ||
            b.includes(FieldBehavior.IMMUTABLE)
          );
        })
        .map((f) => f.name)
        .filter((f) => !(f in (r.computed ?? {})));
      const written = new Set(
        Object.values(r.columns).flatMap((c) => ("field" in c && c.updated ? [c.field] : [])),
      );
      expect(mutable.filter((f) => !written.has(f))).toEqual([]);
    });
  });

  it("match the tables and views the SQLite migrations make", () => {
    const db = new Sqlite(":memory:");
    migrate(db);
    const columnsOf = (table: string) =>
      (db.pragma(`table_info(${table})`) as { name: string }[]).map((c) => c.name);
    for (const d of declaredColumns("sqlite")) {
      expect({ kind: d.kind, columns: columnsOf(d.table).sort() }).toEqual({
        kind: d.kind,
        columns: d.columns,
      });
      if (d.view) expect(columnsOf(d.view)).toEqual(expect.arrayContaining(d.viewColumns));
    }
    db.close();
  });

  it("sort Lists only by columns that are never NULL (a keyset cursor cannot pass a NULL)", () => {
    const db = new Sqlite(":memory:");
    migrate(db);
    for (const r of declared) {
      const info = db.pragma(`table_info(${r.table})`) as {
        name: string;
        notnull: number;
        pk: number;
      }[];
      const message = typeof r.message === "string" ? served.get(r.message)?.message : undefined;
      if (!message) continue;
      // The fields a List admits (src/list/sort-fields.ts): the message's scalars with a column.
      for (const field of sortFieldsOf(message, r.listColumns).names) {
        const column = r.listColumns.sort[field]!;
        const c = info.find((x) => x.name === column);
        // A view's own column (a binding's role name) comes from a NOT NULL column it joins.
        if (!c) continue;
        expect(c.notnull === 1 || c.pk > 0, `${r.kind}.${field} (${column}) may be NULL`).toBe(
          true,
        );
      }
    }
    db.close();
  });
});
