import { mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { afterAll, expect, it } from "vitest";
import { readConsoleFile } from "../../src/console-routes.js";

// readConsoleFile compresses a file once a process (every server the process starts then shares
// what it made): a file written again must be compressed again, never served as it was.

const dir = mkdtempSync(join(tmpdir(), "gatehouse-console-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("compresses a file again once it was written again, and an unchanged one once", async () => {
  const name = "app.js";
  const path = join(dir, name);
  const type = "text/javascript; charset=utf-8";
  const first = `console.log(${JSON.stringify("first ".repeat(200))});\n`;
  writeFileSync(path, first);
  const a = readConsoleFile(dir, name, type);
  expect(a.body.toString()).toBe(first);
  const aForms = await a.encoded();
  expect(brotliDecompressSync(aForms.br!).toString()).toBe(first);
  // The same file, unchanged, read by another server: what was made, not made again.
  const again = await readConsoleFile(dir, name, type).encoded();
  expect(again.br).toBe(aForms.br);
  expect(again.gzip).toBe(aForms.gzip);

  // Written again with the same size and, as a fast build can, within the same mtime tick:
  // the time is set apart so that the check does not depend on the file system's resolution.
  const second = first.replace("first ", "other ");
  expect(second.length).toBe(first.length);
  writeFileSync(path, second);
  utimesSync(path, new Date(), new Date(Date.now() + 5_000));
  const b = readConsoleFile(dir, name, type);
  expect(b.body.toString()).toBe(second);
  const bForms = await b.encoded();
  expect(brotliDecompressSync(bForms.br!).toString()).toBe(second);
  expect(gunzipSync(bForms.gzip!).toString()).toBe(second);
});
