import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";

/** One record of an import file: its value, or why it could not be read. */
export type FileRecord = { n: number; value: unknown } | { n: number; error: string };

/** ImportFileError is a file that cannot be read at all (as opposed to one bad record). */
export class ImportFileError extends Error {
  override name = "ImportFileError";
}

/**
 * Read the records of an import file: one JSON document, a JSON array of documents, or JSON
 * lines (one document a line, blank lines ignored). Gzip is recognized by its magic bytes and
 * decompressed, whatever the file is called. Records are numbered from 1 (for JSON lines, the
 * line number); a JSON line that does not parse is a record with an error, so the others still
 * import. Throws ImportFileError for an unreadable file or a broken array.
 */
export function readRecords(path: string): FileRecord[] {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new ImportFileError(`cannot read ${path}: ${(err as Error).message}`);
  }
  return parseRecords(decode(bytes, path));
}

/** The text of a file's bytes: gunzipped when it starts with the gzip magic, BOM removed. */
function decode(bytes: Buffer, path: string): string {
  let raw = bytes;
  if (bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      raw = gunzipSync(bytes);
    } catch (err) {
      throw new ImportFileError(`${path}: broken gzip data: ${(err as Error).message}`);
    }
  }
  const text = raw.toString("utf8");
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Split text into records (see readRecords). */
export function parseRecords(text: string): FileRecord[] {
  const trimmed = text.trimStart();
  if (trimmed === "") return [];
  if (trimmed.startsWith("[")) {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw new ImportFileError(`not a valid JSON array: ${(err as Error).message}`);
    }
    return (doc as unknown[]).map((value, i) => ({ n: i + 1, value }));
  }
  // A whole document first (it may be pretty-printed over many lines), else JSON lines.
  try {
    return [{ n: 1, value: JSON.parse(text) as unknown }];
  } catch {
    return jsonLines(text);
  }
}

function jsonLines(text: string): FileRecord[] {
  const out: FileRecord[] = [];
  for (const [i, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    try {
      out.push({ n: i + 1, value: JSON.parse(line) as unknown });
    } catch (err) {
      out.push({ n: i + 1, error: `not valid JSON: ${(err as Error).message}` });
    }
  }
  return out;
}
