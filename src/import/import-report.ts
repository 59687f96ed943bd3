/** Where an import writes: its summary, its rejections, and a progress line on a terminal. */
export interface ImportIo {
  out(line: string): void;
  err(line: string): void;
  /** Overwrite the progress line; absent when the output is not a terminal. */
  progress?: (line: string) => void;
}

/** One reason from every failing field: `field: reason; field: reason`. */
export function describeViolations(list: readonly { field: string; description: string }[]) {
  return list.map((v) => `${v.field}: ${v.description}`).join("; ");
}

/** What an import did, record by record. */
export interface ImportSummary {
  read: number;
  created: number;
  updated: number;
  unchanged: number;
  rejected: { n: number; id: string; reason: string }[];
}

/** An empty summary. */
export function emptySummary(): ImportSummary {
  return { read: 0, created: 0, updated: 0, unchanged: 0, rejected: [] };
}

/** The most rejections written one a line; the rest are counted. */
export const maxRejectionLines = 100;

/** Write the rejections (to err) and the one-line summary (to out). */
export function report(kind: string, s: ImportSummary, io: ImportIo): void {
  io.progress?.("");
  for (const r of s.rejected.slice(0, maxRejectionLines)) {
    io.err(`rejected record ${r.n}${r.id ? ` (${r.id})` : ""}: ${r.reason}`);
  }
  const more = s.rejected.length - maxRejectionLines;
  if (more > 0) io.err(`... and ${more} more rejected records`);
  io.out(
    `${kind}: ${s.read} read, ${s.created} created, ${s.updated} updated, ` +
      `${s.unchanged} unchanged, ${s.rejected.length} rejected`,
  );
}
