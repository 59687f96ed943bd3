// `npm start`'s first step: refuse bad settings (the GATEHOUSE_* environment variables)
// before anything is built, so a wrong setting costs a second, not a build. It checks with the
// last build's settings code (dist/src/config.js); without a build yet there is nothing to check
// with, and `gatehouse serve` checks them once built, as it always does.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const built = join(root, "dist", "src", "config.js");

if (existsSync(built)) {
  const { ConfigError, loadConfig } = await import(pathToFileURL(built).href);
  try {
    loadConfig(process.argv.slice(2), process.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`gatehouse: configuration error: ${err.message}\n`);
    process.exit(2);
  }
}
