// Build the web console: console/src (TypeScript, Preact) bundled by esbuild into
// dist/console/ with content-hashed file names, and an index.html that loads them.
// `npm run build` runs it; so does the test setup, so tests never serve a stale bundle.
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import * as esbuild from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Build into `outDir` (default dist/console); resolves to the files and the gzipped size. */
export async function buildConsole(outDir = join(root, "dist", "console")) {
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  const result = await esbuild.build({
    entryPoints: [join(root, "console", "src", "main.tsx"), join(root, "console", "styles.css")],
    bundle: true,
    minify: true,
    format: "esm",
    target: ["chrome120", "firefox120", "safari17"],
    jsx: "automatic",
    jsxImportSource: "preact",
    entryNames: "[name]-[hash]",
    outdir: outDir,
    metafile: true,
    legalComments: "linked",
    logLevel: "warning",
  });
  const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
  const script = outputs.find((f) => f.startsWith("main-") && f.endsWith(".js"));
  const style = outputs.find((f) => f.startsWith("styles-") && f.endsWith(".css"));
  if (!script || !style) throw new Error(`console build: missing outputs in ${outputs.join(", ")}`);
  const html = (await readFile(join(root, "console", "index.html"), "utf8"))
    .replace("%SCRIPT%", script)
    .replace("%STYLE%", style);
  await writeFile(join(outDir, "index.html"), html);
  // Precompressed once here, so the server sends them without compressing per request
  // (src/console-routes.ts picks one by Accept-Encoding).
  let gzipped = 0;
  for (const f of [script, style, "index.html"]) {
    const body = await readFile(join(outDir, f));
    const gz = gzipSync(body, { level: 9 });
    const br = brotliCompressSync(body, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: 11,
        [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      },
    });
    await writeFile(join(outDir, `${f}.gz`), gz);
    await writeFile(join(outDir, `${f}.br`), br);
    gzipped += gz.length;
  }
  return { outDir, files: [...outputs, "index.html"], gzippedBytes: gzipped };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { outDir, gzippedBytes } = await buildConsole();
  console.log(`console built in ${outDir}: ${(gzippedBytes / 1024).toFixed(1)} kB gzipped`);
}
