import { mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { afterAll, expect, it } from "vitest";
import { readConsoleFile } from "../../src/console-routes.js";

// readConsoleFile compresses a file once a process (every server the process starts then shares
// it): a file written again must be read again, never served as it was.

const dir = mkdtempSync(join(tmpdir(), "gatehouse-console-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("reads a file again once it was written again, and its compressed forms with it", () => {
  const name = "app.js";
  const path = join(dir, name);
  const first = `console.log(${JSON.stringify("first ".repeat(200))});\n`;
  writeFileSync(path, first);
  const a = readConsoleFile(dir, name, "text/javascript; charset=utf-8");
  expect(a.body.toString()).toBe(first);
  expect(brotliDecompressSync(a.encoded.br!).toString()).toBe(first);
  // The same file, unchanged: what was made, not made again.
  expect(readConsoleFile(dir, name, "text/javascript; charset=utf-8")).toBe(a);

  // Written again with the same size and, as a fast build can, within the same mtime tick:
  // the time is set apart so that the check does not depend on the file system's resolution.
  const second = first.replace("first ", "other ");
  expect(second.length).toBe(first.length);
  writeFileSync(path, second);
  utimesSync(path, new Date(), new Date(Date.now() + 5_000));
  const b = readConsoleFile(dir, name, "text/javascript; charset=utf-8");
  expect(b.body.toString()).toBe(second);
  expect(brotliDecompressSync(b.encoded.br!).toString()).toBe(second);
  expect(gunzipSync(b.encoded.gzip!).toString()).toBe(second);
});
