// Copy the files beside the code in src/ that are not TypeScript (the /docs page's index.html
// and docs.js, say) to the same place beside the compiled code in dist/src/: tsc emits only
// JavaScript, and a server started from a build (the container image keeps dist/, not src/)
// reads them from there. `npm run build` runs it after tsc.
import { cpSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Copy every non-TypeScript file under `<from>/src` to `<to>/src`; resolves to the count. */
export function copyAssets(from = root, to = join(root, "dist")) {
  let copied = 0;
  cpSync(join(from, "src"), join(to, "src"), {
    recursive: true,
    // Directories are walked; of the files, TypeScript is tsc's to emit.
    filter: (path) => {
      if (!statSync(path).isFile()) return true;
      if (/\.[cm]?ts$/.test(path)) return false;
      copied++;
      return true;
    },
  });
  return copied;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(`copied ${copyAssets()} files from src/ to dist/src/`);
}
