import { parseArgs } from "node:util";
import { ConfigError, loadConfig } from "../config.js";
import { importAdvisories } from "../import/import-advisories.js";
import type { ImportIo, ImportSummary } from "../import/import-report.js";
import { report } from "../import/import-report.js";
import { importTags } from "../import/import-tags.js";
import { ImportFileError, readRecords } from "../import/read-records.js";
import type { Store } from "../store/store.js";
import { CliError } from "./cli-io.js";
import { importUsage } from "./import-usage.js";
import { openCommandDatabase } from "./open-database.js";

/** Where the command writes; the process streams by default. */
export interface ImportCommandIo {
  stdout: { write(s: string): unknown; isTTY?: boolean };
  stderr: { write(s: string): unknown; isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

const processIo: ImportCommandIo = {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
};

/**
 * Run `gatehouse import advisories|tags` against the server's database (GATEHOUSE_DB or
 * --db, as serve reads it). Exit codes: 0 every record imported or unchanged; 1 some records
 * rejected (the others are in); 2 a usage error, a database that cannot be opened, a missing
 * group or repo, or an unreadable file (nothing written).
 */
export async function importCommand(
  argv: string[],
  io: ImportCommandIo = processIo,
): Promise<number> {
  const fail = (message: string) => {
    io.stderr.write(`gatehouse import: ${message}\n`);
    return 2;
  };
  const [kind, ...rest] = argv;
  if (kind !== "advisories" && kind !== "tags") {
    return fail(`expected "advisories" or "tags"\n\nUsage:\n${importUsage}`);
  }
  let values: {
    group?: string | undefined;
    repo?: string | undefined;
    db?: string | undefined;
    "database-url"?: string | undefined;
  };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: rest,
      options: {
        group: { type: "string" },
        repo: { type: "string" },
        db: { type: "string" },
        "database-url": { type: "string" },
      },
      allowPositionals: true,
      strict: true,
    }));
  } catch (err) {
    return fail((err as Error).message);
  }
  const parent = kind === "advisories" ? values.group : values.repo;
  const flag = kind === "advisories" ? "--group" : "--repo";
  if (!parent) return fail(`${flag} <uid> is required`);
  if (positionals.length !== 1) return fail("exactly one input file is required");
  const file = positionals[0]!;

  let store: Store;
  try {
    const config = loadConfig(
      [
        ...(values.db ? ["--db", values.db] : []),
        ...(values["database-url"] ? ["--database-url", values["database-url"]] : []),
      ],
      io.env,
    );
    store = await openCommandDatabase(config, { create: false });
  } catch (err) {
    if (err instanceof ConfigError) return fail(err.message);
    if (err instanceof CliError) return fail(err.message);
    throw err;
  }
  try {
    const found =
      kind === "advisories" ? await store.getGroup(parent) : await store.getRepo(parent);
    if (!found) return fail(`${kind === "advisories" ? "group" : "repo"} ${parent} not found`);
    let records: ReturnType<typeof readRecords>;
    try {
      records = readRecords(file);
    } catch (err) {
      if (err instanceof ImportFileError) return fail(err.message);
      throw err;
    }
    const out = lineIo(io);
    const summary: ImportSummary =
      kind === "advisories"
        ? await importAdvisories(store, parent, records, out)
        : await importTags(store, parent, records, out);
    report(kind, summary, out);
    return summary.rejected.length > 0 ? 1 : 0;
  } finally {
    await store.close();
  }
}

function lineIo(io: ImportCommandIo): ImportIo {
  const base: ImportIo = {
    out: (line) => io.stdout.write(`${line}\n`),
    err: (line) => io.stderr.write(`${line}\n`),
  };
  if (!io.stderr.isTTY) return base;
  // \r and erase-line: one line that keeps its place.
  return { ...base, progress: (line) => io.stderr.write(`\r\x1b[2K${line}`) };
}
