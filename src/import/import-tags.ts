import { changeScope } from "../events/audit-scope.js";
import type { NewTag } from "../store/registry-store.js";
import type { Store } from "../store/store.js";
import { newChildUid } from "../uid.js";
import { violations } from "../validation/field-rules.js";
import { checkDigest, checkTagName } from "../validation/registry-rules.js";
import {
  describeViolations,
  emptySummary,
  type ImportIo,
  type ImportSummary,
} from "./import-report.js";
import type { FileRecord } from "./read-records.js";

/** The audit scope of one batch written by the import command. */
const importScope = () =>
  changeScope({
    type: "dev.gatehouse.registry.tag.imported.v1",
    source: "gatehouse import tags",
    protocol: "cli",
    operator: "gatehouse import tags",
  });

/** Tags written per transaction. */
export const tagBatchSize = 1000;

/**
 * Import `{name, digest, deprecated?}` records into a repo: a new name creates a tag, a name
 * whose digest or deprecated flag differs moves it, an identical one is left untouched. Each
 * record is validated as the API validates a Create; a bad one is rejected with its reason.
 */
export async function importTags(
  store: Store,
  repoUid: string,
  records: readonly FileRecord[],
  io: ImportIo,
  now: () => number = Date.now,
): Promise<ImportSummary> {
  const summary = emptySummary();
  let batch: NewTag[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    // One event per batch (one transaction), about the repo, by the operator's command.
    const outcomes = await store
      .recording(importScope())
      .importTags(repoUid, batch, () => newChildUid(repoUid), now());
    for (const outcome of outcomes) summary[outcome]++;
    batch = [];
    io.progress?.(`tags: ${summary.read} of ${records.length} records`);
  };

  for (const record of records) {
    summary.read++;
    if ("error" in record) {
      summary.rejected.push({ n: record.n, id: "", reason: record.error });
      continue;
    }
    const r = record.value as Record<string, unknown> | null;
    if (typeof r !== "object" || r === null || Array.isArray(r)) {
      summary.rejected.push({ n: record.n, id: "", reason: "not a JSON object" });
      continue;
    }
    const name = typeof r.name === "string" ? r.name : "";
    const digest = typeof r.digest === "string" ? r.digest : "";
    const v = violations();
    checkTagName(v, "name", name);
    checkDigest(v, "digest", digest);
    if (r.deprecated !== undefined && typeof r.deprecated !== "boolean") {
      v.add("deprecated", "must be true or false");
    }
    if (v.list.length > 0) {
      summary.rejected.push({ n: record.n, id: name, reason: describeViolations(v.list) });
      continue;
    }
    batch.push({ name, digest, deprecated: r.deprecated === true });
    if (batch.length >= tagBatchSize) await flush();
  }
  await flush();
  return summary;
}
