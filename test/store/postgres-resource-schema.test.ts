import pg from "pg";
import { expect, it } from "vitest";
import { newPgDatabase } from "../helpers/postgres.js";
import { declaredColumns } from "./declared-columns.js";

// As test/store/resource-declarations.test.ts on SQLite: each resource's declared columns are
// exactly its table's as the PostgreSQL migrations make it, and its view has the view's.
it("resource declarations match the tables and views the PostgreSQL migrations make", async () => {
  const client = new pg.Client({ connectionString: await newPgDatabase() });
  await client.connect();
  try {
    const columnsOf = async (table: string) =>
      (
        await client.query<{ column_name: string }>(
          "SELECT column_name FROM information_schema.columns WHERE table_name = $1",
          [table],
        )
      ).rows.map((r) => r.column_name);
    for (const d of declaredColumns("pg")) {
      expect({ kind: d.kind, columns: (await columnsOf(d.table)).sort() }).toEqual({
        kind: d.kind,
        columns: d.columns,
      });
      if (d.view) expect(await columnsOf(d.view)).toEqual(expect.arrayContaining(d.viewColumns));
    }
  } finally {
    await client.end();
  }
});
