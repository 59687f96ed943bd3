import type { Resource } from "../../src/store/rows/resource.js";
import { resources } from "../../src/store/rows/resources.js";

/** The columns each declaration says its table and its view have, on `dialect`. */
export function declaredColumns(dialect: "sqlite" | "pg") {
  return resources.map((r: Resource<never, unknown>) => {
    const entries = Object.entries(r.columns);
    const inTable = entries
      .filter(([, c]) => !c.fromView && (c.only === undefined || c.only === dialect))
      .map(([name]) => name);
    return {
      kind: r.kind,
      table: r.table,
      view: r.view,
      columns: inTable.sort(),
      viewColumns: entries.filter(([, c]) => c.fromView).map(([name]) => name),
    };
  });
}
