// Build the web console: console/src (TypeScript, Preact) bundled by esbuild into
// dist/console/ with content-hashed file names, and an index.html that loads them.
// `npm run build` runs it; so does the test setup, so tests never serve a stale bundle.
import { createHash } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import * as esbuild from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

// What the last build read (esbuild's metafile inputs, index.html and this script) and a hash of
// each, beside its outputs: a build whose inputs all hash the same is skipped.
const inputsFile = "build-inputs.json";

async function hashOf(path) {
  try {
    return createHash("sha256")
      .update(await readFile(path))
      .digest("hex");
  } catch {
    return "missing";
  }
}

/** The last build's answer when nothing it read has changed since, else undefined. */
async function unchanged(outDir) {
  let last;
  try {
    last = JSON.parse(await readFile(join(outDir, inputsFile), "utf8"));
  } catch {
    return undefined;
  }
  for (const [path, hash] of Object.entries(last.inputs)) {
    if ((await hashOf(join(root, path))) !== hash) return undefined;
  }
  for (const f of last.result.files) {
    if ((await hashOf(join(outDir, f))) === "missing") return undefined;
  }
  return { ...last.result, outDir };
}

/**
 * Build into `outDir` (default dist/console); resolves to the files, the gzipped size and
 * whether it was skipped because nothing it reads changed (`force` builds anyway).
 */
export async function buildConsole(outDir = join(root, "dist", "console"), { force = false } = {}) {
  if (!force) {
    const same = await unchanged(outDir);
    if (same) return { ...same, skipped: true };
  }
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
    // Input paths in the metafile relative to the checkout, whatever the working directory.
    absWorkingDir: root,
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
  const built = { files: [...outputs, "index.html"], gzippedBytes: gzipped };
  const read = [...Object.keys(result.metafile.inputs), "console/index.html", "console/build.mjs"];
  const inputs = {};
  for (const path of read) inputs[path] = await hashOf(join(root, path));
  await writeFile(join(outDir, inputsFile), JSON.stringify({ inputs, result: built }));
  return { outDir, ...built, skipped: false };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { outDir, gzippedBytes, skipped } = await buildConsole();
  console.log(
    skipped
      ? `console unchanged in ${outDir}: ${(gzippedBytes / 1024).toFixed(1)} kB gzipped`
      : `console built in ${outDir}: ${(gzippedBytes / 1024).toFixed(1)} kB gzipped`,
  );
}
