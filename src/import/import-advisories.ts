import { changeScope } from "../events/audit-scope.js";
import type { AdvisoryContent } from "../store/advisory-store.js";
import type { Store } from "../store/store.js";
import { newChildUid } from "../uid.js";
import { checkAdvisoryFields } from "../validation/advisory-rules.js";
import { violations } from "../validation/field-rules.js";
import {
  describeViolations,
  emptySummary,
  type ImportIo,
  type ImportSummary,
} from "./import-report.js";
import { advisoryFromOsv, OsvError } from "./osv.js";
import type { FileRecord } from "./read-records.js";

/** The audit scope of one batch written by the import command. */
const importScope = () =>
  changeScope({
    type: "dev.gatehouse.vulnerabilities.advisory.imported.v1",
    source: "gatehouse import advisories",
    protocol: "cli",
    operator: "gatehouse import advisories",
  });

/** Advisories written per transaction. */
export const advisoryBatchSize = 500;

/**
 * Import OSV records into a group, upserting by advisoryId: each record is mapped
 * (advisoryFromOsv) and validated as the API validates a Create, then written in batches of
 * one transaction each. A bad record is counted as rejected with its reason and skipped; an
 * advisory is never half-written. Importing the same file again leaves everything unchanged.
 */
export async function importAdvisories(
  store: Store,
  groupUid: string,
  records: readonly FileRecord[],
  io: ImportIo,
  now: () => number = Date.now,
): Promise<ImportSummary> {
  const summary = emptySummary();
  let batch: { n: number; content: AdvisoryContent }[] = [];

  const flush = async () => {
    if (batch.length === 0) return;
    const contents = batch.map((b) => b.content);
    // One event per batch (one transaction), about the group, by the operator's command.
    const outcomes = await store
      .recording(importScope())
      .importAdvisories(groupUid, contents, () => newChildUid(groupUid), now());
    for (const [i, outcome] of outcomes.entries()) {
      const { n, content } = batch[i]!;
      if (typeof outcome === "string") summary[outcome]++;
      else summary.rejected.push({ n, id: content.advisoryId, reason: outcome.rejected });
    }
    batch = [];
    io.progress?.(`advisories: ${summary.read} of ${records.length} records`);
  };

  for (const record of records) {
    summary.read++;
    const id = idOf(record);
    if ("error" in record) {
      summary.rejected.push({ n: record.n, id, reason: record.error });
      continue;
    }
    let content: AdvisoryContent;
    try {
      content = advisoryFromOsv(record.value);
    } catch (err) {
      if (!(err instanceof OsvError)) throw err;
      summary.rejected.push({ n: record.n, id, reason: err.message });
      continue;
    }
    const v = violations();
    checkAdvisoryFields(v, content);
    if (v.list.length > 0) {
      summary.rejected.push({ n: record.n, id, reason: describeViolations(v.list) });
      continue;
    }
    batch.push({ n: record.n, content });
    if (batch.length >= advisoryBatchSize) await flush();
  }
  await flush();
  return summary;
}

function idOf(record: FileRecord): string {
  if (!("value" in record)) return "";
  const v = record.value as { id?: unknown } | null;
  return typeof v?.id === "string" ? v.id : "";
}
